import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/run-control/index.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { runControlConfig } from '../../shared/run-control/config.js'
import { aWorkflow, create, setStatus, startCliPlane, workflow, type CliPlane } from './harness.js'

let plane: CliPlane
let server: ServerType
let url: string

beforeAll(async () => {
  plane = await startCliPlane()
  const app = createApp({
    kube: new KubeClient(plane.api.kubeConfigObject()), log: silentLogger, now: () => new Date('2026-02-01T12:00:00Z'),
    config: runControlConfig({ KINETIC_RUN_CONTROL_AUTH: 'none' }),
  })
  url = await new Promise<string>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`))
  })
  await create(plane, 'workflows', aWorkflow('release', ['build', 'ship<build']))
  await setStatus(plane, 'release', { phase: 'Running', runId: 'r1', stepStatuses: [{ name: 'build', phase: 'Succeeded' }, { name: 'ship', phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-ship=true)' }] })
  await create(plane, 'workflows', aWorkflow('weekly', ['collect'], { annotations: { 'purko.io/template': 'true' } }))
})
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await plane.close()
})

describe('the CLI through the real run-control function (auth none, embedded API server)', () => {
  it('approve records purko\'s annotation and the decision with its reason', async () => {
    const { code, stdout, stderr } = await plane.cli(['approve', 'release', 'ship', '--reason', 'release train', '--server', url])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toBe('step ship of workflow release approved\n')
    const annotations = (await workflow(plane, 'release')).metadata.annotations
    expect(annotations['purko.io/approve-ship']).toBe('true')
    expect(JSON.parse(annotations['kinetic.dev/decision-ship'])).toMatchObject({ verdict: 'approved', user: 'anonymous', reason: 'release train' })
  })

  it('run --server creates a manual run of a template and prints its name', async () => {
    const { code, stdout } = await plane.cli(['run', 'weekly', '--param', 'week=5', '--server', url])
    expect(code).toBe(0)
    const run = await workflow(plane, stdout.trim())
    expect(run.metadata.annotations).toMatchObject({ 'purko.io/workflow-template': 'weekly', 'purko.io/trigger-type': 'manual', 'purko.io/trigger-source': 'anonymous' })
    expect(run.spec.parameters).toEqual({ week: '5' })
  })

  it('rerun and cancel with a reason go through it (KINETIC_RUN_CONTROL_URL)', async () => {
    const env = { env: { KUBECONFIG: plane.kubeconfigPath, KINETIC_RUN_CONTROL_URL: url } }
    expect((await plane.cli(['cancel', 'release', '--reason', 'wrong branch'], env)).code).toBe(0)
    expect((await workflow(plane, 'release')).metadata.annotations['purko.io/cancel']).toBe('true')
    await setStatus(plane, 'release', { phase: 'Cancelled', runId: 'r1' })
    const rerun = await plane.cli(['rerun', 'release', '--param', 'branch=main', '--reason', 'fixed'], env)
    expect(rerun).toEqual({ code: 0, stdout: 'workflow release rerun requested\n', stderr: '' })
    const wf = await workflow(plane, 'release')
    expect(wf.spec.parameters).toEqual({ branch: 'main' })
    expect(wf.metadata.annotations['purko.io/rerun']).toBeDefined()
    expect(wf.metadata.annotations['purko.io/cancel']).toBeUndefined()
  })

  it('shows run-control\'s own words when it refuses', async () => {
    const { code, stderr } = await plane.cli(['approve', 'release', 'nope', '--server', url])
    expect(code).toBe(1)
    expect(stderr).toMatch(/^error: run-control answered 4\d\d to POST \/api\/approve\/ai-agents\/release\/nope: .*nope/)
  })
})
