import { describe, expect, it } from 'vitest'
import { ConflictError } from '../../shared/core/errors.js'
import { applyChildWrite } from '../../shared/kube/apply.js'
import { EmbeddedKube } from '../support/embedded-kube.js'

const account = (name: string) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: 'team' } })

describe('the one applier of desired children', () => {
  it('creates an absent child, and reports one made by another writer since the read as a lost race', async () => {
    const kube = new EmbeddedKube()
    expect(await applyChildWrite(kube, { op: 'create', kind: 'ServiceAccount', object: account('agent-a-sa') })).toBe('created')
    expect(kube.writes).toEqual(['create ServiceAccount/agent-a-sa'])

    await expect(applyChildWrite(kube, { op: 'create', kind: 'ServiceAccount', object: account('agent-a-sa') }))
      .rejects.toThrow(new ConflictError('ServiceAccount team/agent-a-sa appeared concurrently'))
  })

  it('takes a shared child that another owner already made as it is', async () => {
    const kube = new EmbeddedKube()
    await applyChildWrite(kube, { op: 'create', kind: 'ServiceAccount', object: account('mcp-bridge') })
    expect(await applyChildWrite(kube, { op: 'create', kind: 'ServiceAccount', object: account('mcp-bridge') }, { shared: true })).toBe('exists')
    expect(kube.writes).toEqual(['create ServiceAccount/mcp-bridge'])
  })

  it('replaces a child guarded by the resourceVersion it was read at, and deletes one no longer wanted', async () => {
    const kube = new EmbeddedKube()
    await applyChildWrite(kube, { op: 'create', kind: 'ConfigMap', object: { metadata: { name: 'notes', namespace: 'team' }, data: { a: '1' } } })
    const read = (await kube.getConfigMap('team', 'notes'))!
    let stored: { metadata?: { resourceVersion?: string } } | undefined
    expect(await applyChildWrite(kube, { op: 'replace', kind: 'ConfigMap', object: { ...read, data: { a: '2' } } }, { stored: (o) => { stored = o } })).toBe('replaced')
    expect((await kube.getConfigMap('team', 'notes'))?.data).toEqual({ a: '2' })
    // The caller that keeps what it wrote gets the stored object, at its new resourceVersion.
    expect(stored?.metadata?.resourceVersion).toBe((await kube.getConfigMap('team', 'notes'))?.metadata?.resourceVersion)
    expect(stored?.metadata?.resourceVersion).not.toBe(read.metadata?.resourceVersion)
    // A second replace from the same read lost the race to the first.
    await expect(applyChildWrite(kube, { op: 'replace', kind: 'ConfigMap', object: { ...read, data: { a: '3' } } })).rejects.toBeInstanceOf(ConflictError)

    await applyChildWrite(kube, { op: 'create', kind: 'ServiceAccount', object: account('old-sa') })
    expect(await applyChildWrite(kube, { op: 'delete', kind: 'ServiceAccount', namespace: 'team', name: 'old-sa' })).toBe('deleted')
    expect(await kube.getServiceAccount('team', 'old-sa')).toBeNull()
  })
})
