import { describe, expect, it } from 'vitest'
import { lazyKube } from '../../shared/kube/lazy.js'
import { EmbeddedKube } from '../support/embedded-kube.js'

describe('lazyKube', () => {
  it('loads the real adapter only on the first call, once, and forwards every call to it', async () => {
    let loads = 0
    const fake = new EmbeddedKube()
    const kube = lazyKube(async () => {
      loads++
      return fake
    })
    expect(loads).toBe(0)

    const [a, b] = await Promise.all([kube.getWorkflow('team', 'none'), kube.listWorkflows()])

    expect(a).toBeNull()
    expect(b).toEqual([])
    expect(loads).toBe(1)
    expect(fake.calls).toBe(2)
  })

  it('passes failures through unchanged', async () => {
    const fake = new EmbeddedKube().failNext('listWorkflows', new Error('boom'))
    await expect(lazyKube(async () => fake).listWorkflows()).rejects.toThrow('boom')
  })
})
