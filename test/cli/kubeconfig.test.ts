import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { stringify } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Session } from '../../cli/command.js'
import { resolveIo } from '../../cli/io.js'
import { resolveConfig } from '../../cli/kubeconfig.js'
import { guardedWrite } from '../../cli/workflows.js'
import { KubeClient } from '../../shared/kube/client.js'
import type { Kube } from '../../shared/kube/port.js'
import { aWorkflow, create, kubeconfigFor, startCliPlane, workflow, type CliPlane } from './harness.js'

let plane: CliPlane
let scratch: string

beforeAll(async () => {
  plane = await startCliPlane()
  scratch = mkdtempSync(join(tmpdir(), 'kinetic-kc-'))
  await create(plane, 'workflows', aWorkflow('shared', ['a'], { annotations: { 'purko.io/template': 'true' } }), 'team-b')
  await create(plane, 'workflows', aWorkflow('shared', ['a'], { annotations: { 'purko.io/template': 'true' } }), 'default')
  await create(plane, 'workflows', aWorkflow('shared', ['a'], { annotations: { 'purko.io/template': 'true' } }), 'ai-agents')
})
afterAll(async () => {
  await plane.close()
  rmSync(scratch, { recursive: true, force: true })
})

function file(name: string, config: Record<string, unknown> | string): string {
  const path = join(scratch, name)
  writeFileSync(path, typeof config === 'string' ? config : stringify(config))
  return path
}

describe('kubeconfig, context and namespace resolution', () => {
  it('uses the current context\'s namespace and user; -n and --context override them', async () => {
    const here = await plane.cli(['run', 'shared'])
    expect((await workflow(plane, here.stdout.trim(), 'ai-agents')).metadata.annotations['purko.io/trigger-source']).toBe('alice')

    // team-b has no namespace: default; its user is bob.
    const other = await plane.cli(['run', 'shared', '--context', 'team-b'])
    expect((await workflow(plane, other.stdout.trim(), 'default')).metadata.annotations['purko.io/trigger-source']).toBe('bob')

    const flagged = await plane.cli(['-n', 'team-b', 'run', 'shared', '--context=team-b'])
    expect(flagged.code).toBe(0)
    expect((await workflow(plane, flagged.stdout.trim(), 'team-b')).metadata.name).toBe(flagged.stdout.trim())
  })

  it('reads ~/.kube/config without $KUBECONFIG, and --kubeconfig over both', async () => {
    const home = join(scratch, 'home')
    mkdirSync(join(home, '.kube'), { recursive: true })
    writeFileSync(join(home, '.kube', 'config'), kubeconfigFor(plane.api.url).replace("current-context: local", 'current-context: team-b'))
    expect(resolveConfig({ env: {}, home })).toMatchObject({ context: 'team-b', namespace: 'default', user: 'bob', server: plane.api.url })
    expect(resolveConfig({ env: {}, home, kubeconfig: plane.kubeconfigPath })).toMatchObject({ context: 'local', namespace: 'ai-agents' })
    const agents = await plane.cli(['agents'], { env: {}, home })
    expect(agents.stderr).toBe('no Agents found in namespace default\n')
  })

  it('merges a $KUBECONFIG list like kubectl: missing files skipped, first definition and first current-context win', () => {
    const first = file('first', {
      apiVersion: 'v1', kind: 'Config', 'current-context': 'one',
      clusters: [{ name: 'c', cluster: { server: 'https://first.example:6443' } }],
      users: [{ name: 'u', user: { token: 't1' } }],
      contexts: [{ name: 'one', context: { cluster: 'c', user: 'u', namespace: 'ns-one' } }],
    })
    const second = file('second', {
      apiVersion: 'v1', kind: 'Config', 'current-context': 'two',
      clusters: [{ name: 'c', cluster: { server: 'https://second.example:6443' } }, { name: 'd', cluster: { server: 'https://d.example' } }],
      users: [{ name: 'u', user: { token: 't2' } }],
      contexts: [{ name: 'two', context: { cluster: 'd', user: 'u' } }],
    })
    const env = { KUBECONFIG: [join(scratch, 'absent'), first, second].join(delimiter) }
    expect(resolveConfig({ env })).toMatchObject({ context: 'one', namespace: 'ns-one', server: 'https://first.example:6443' })
    expect(resolveConfig({ env, context: 'two' })).toMatchObject({ context: 'two', namespace: 'default', server: 'https://d.example' })
    expect(resolveConfig({ env, context: 'two', namespace: 'x' }).namespace).toBe('x')
  })

  it.each([
    ['no kubeconfig at all', { env: {} }, [] as string[], 'error: no kubeconfig found; set KUBECONFIG or run `npm start`\n'],
    ['a context that does not exist', {}, ['--context', 'prod'], 'error: context "prod" not found in the kubeconfig'],
    ['a --kubeconfig that does not exist', {}, ['--kubeconfig', '/nonexistent/config'], 'error: kubeconfig /nonexistent/config does not exist\n'],
  ])('fails with an actionable message for %s', async (_, io, flags, message) => {
    const { code, stderr } = await plane.cli(['status', 'shared', ...flags], { home: join(scratch, 'nohome'), ...io })
    expect(code).toBe(1)
    expect(stderr.startsWith(message)).toBe(true)
  })
})

describe('errors a person can act on', () => {
  let forbidding: Server
  let forbiddingUrl: string

  beforeAll(async () => {
    forbidding = createServer((req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({
        kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403,
        message: `workflows.purko.io "shared" is forbidden: User "alice" cannot get resource "workflows" in API group "purko.io" in the namespace "ai-agents"`,
      }))
    })
    await new Promise<void>((resolve) => forbidding.listen(0, '127.0.0.1', resolve))
    forbiddingUrl = `http://127.0.0.1:${(forbidding.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => forbidding.close(() => resolve())))

  it('a 403 names the user, verb, resource and namespace, with the kubectl check', async () => {
    const path = file('forbidden', kubeconfigFor(forbiddingUrl))
    const { code, stderr } = await plane.cli(['status', 'shared'], { env: { KUBECONFIG: path } })
    expect(code).toBe(1)
    expect(stderr).toContain('forbidden: user "alice" may not get workflows.purko.io in namespace ai-agents (context local)')
    expect(stderr).toContain('cannot get resource "workflows" in API group "purko.io"')
    expect(stderr).toContain('kubectl auth can-i get workflows.purko.io -n ai-agents')
  })

  it('an unreachable server names the server and what to check', async () => {
    const path = file('down', kubeconfigFor('http://127.0.0.1:1'))
    const { code, stderr } = await plane.cli(['agents'], { env: { KUBECONFIG: path } })
    expect(code).toBe(1)
    expect(stderr).toContain('cannot reach the Kubernetes API server at http://127.0.0.1:1')
    expect(stderr).toContain('`npm start`')
  })

  it('a write that loses a race is re-read, re-checked and retried once', async () => {
    await create(plane, 'workflows', aWorkflow('raced', ['a']))
    const session = await new Session(resolveIo({ stdout: () => {}, stderr: () => {}, env: { KUBECONFIG: plane.kubeconfigPath } }), 'table', {}).init()
    const real = new KubeClient(session.config.kc)
    let attempts = 0
    const racing = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'patchWorkflowMetadata') return Reflect.get(target, prop, receiver)
        return async (...args: Parameters<Kube['patchWorkflowMetadata']>) => {
          attempts++
          if (attempts === 1) {
            // Someone else writes between our read and our write.
            const current = await real.getWorkflow('ai-agents', 'raced')
            await real.patchWorkflowMetadata('ai-agents', 'raced', current!.metadata.resourceVersion!, { annotations: { 'team.example/touched': 'yes' } })
          }
          return target.patchWorkflowMetadata(...args)
        }
      },
    })
    session.kube = racing
    let checks = 0
    await guardedWrite(session, 'raced', 'patch', (kube, _wf, rv) => kube.patchWorkflowMetadata('ai-agents', 'raced', rv, { annotations: { 'purko.io/approve-a': 'true' } }), () => { checks++ })
    expect({ attempts, checks }).toEqual({ attempts: 2, checks: 2 })
    expect((await workflow(plane, 'raced')).metadata.annotations).toEqual({ 'team.example/touched': 'yes', 'purko.io/approve-a': 'true' })
  })
})
