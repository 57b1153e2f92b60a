import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { CoreV1Api } from '@kubernetes/client-node'
import { parse } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { COMMANDS } from '../../cli/main.js'
import { aWorkflow, create, currentRunOf, setStatus, startCliPlane, workflow, type CliPlane } from './harness.js'

let plane: CliPlane
let core: CoreV1Api

beforeAll(async () => {
  plane = await startCliPlane()
  core = plane.api.kubeConfigObject().makeApiClient(CoreV1Api)
})
afterAll(async () => {
  await plane.close()
})

const APPROVAL_WAIT = 'Waiting for human approval (set annotation purko.io/approve-deploy=true)'

describe('kinetic run', () => {
  it('creates a manual run of a template with the parameters merged and prints its name', async () => {
    const template = await create(plane, 'workflows', aWorkflow('nightly', ['collect', 'report<collect'], {
      annotations: { 'purko.io/template': 'true', 'team.example/owner': 'ops' },
      spec: { parameters: { region: 'us', day: 'sun' } },
    }))
    const { code, stdout, stderr } = await plane.cli(['run', 'nightly', '--param', 'region=eu', '-p', 'note=a=b'])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toMatch(/^nightly-run-[0-9a-f]{8}\n$/)
    const run = await workflow(plane, stdout.trim())
    expect(run.metadata.annotations).toEqual({
      'purko.io/workflow-template': 'nightly', 'purko.io/trigger-type': 'manual', 'purko.io/trigger-source': 'alice',
    })
    expect(run.metadata.labels).toEqual({ 'kinetic.dev/template': 'nightly' })
    expect(run.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Workflow', name: 'nightly', uid: template.metadata.uid, controller: true })])
    expect(run.spec.parameters).toEqual({ region: 'eu', day: 'sun', note: 'a=b' })
    expect(run.spec.steps.map((s: { name: string }) => s.name)).toEqual(['collect', 'report'])
  })

  it('prints the created run as JSON with -o json', async () => {
    const { code, stdout } = await plane.cli(['run', 'nightly', '-o', 'json'])
    expect(code).toBe(0)
    const run = JSON.parse(stdout)
    expect(run).toMatchObject({ kind: 'Workflow', metadata: { namespace: 'ai-agents', annotations: { 'purko.io/trigger-type': 'manual' } } })
  })

  it('waits with --wait and exits 0 when the run succeeds, 1 when it fails', async () => {
    const finishWith = (phase: string) => (text: string) => {
      const name = text.trim()
      if (/^nightly-run-[0-9a-f]{8}$/.test(name)) {
        void setStatus(plane, name, { phase, runId: 'r1', startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:01:05Z', message: phase === 'Failed' ? 'Step report failed' : undefined })
      }
    }
    const ok = await plane.cli(['run', 'nightly', '--wait'], { stdout: finishWith('Succeeded') })
    expect(ok.code).toBe(0)
    expect(ok.stdout).toMatch(/^nightly-run-[0-9a-f]{8}\nnightly-run-[0-9a-f]{8} Succeeded in 1m5s\n$/)
    const failed = await plane.cli(['run', 'nightly', '--wait'], { stdout: finishWith('Failed') })
    expect(failed.code).toBe(1)
    expect(failed.stderr).toMatch(/nightly-run-[0-9a-f]{8} Failed in 1m5s: Step report failed/)
  })

  it('refuses a Workflow that is not a template, and names a missing one', async () => {
    await create(plane, 'workflows', aWorkflow('plain', ['only']))
    const plain = await plane.cli(['run', 'plain'])
    expect(plain.code).toBe(1)
    expect(plain.stderr).toContain('workflow plain is not a template')
    expect(plain.stderr).toContain('kinetic rerun plain')
    const missing = await plane.cli(['run', 'nope'])
    expect(missing).toEqual({ code: 1, stdout: '', stderr: 'error: workflow nope not found in namespace ai-agents\n' })
  })

  it('is a usage error (exit 2) without a template or with a malformed --param', async () => {
    expect((await plane.cli(['run'])).code).toBe(2)
    const bad = await plane.cli(['run', 'nightly', '--param', 'novalue'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--param needs key=value, got "novalue"')
    expect((await plane.cli(['run', 'nightly', '--bogus'])).stderr).toContain('unknown flag --bogus')
  })
})

describe('kinetic trigger', () => {
  it('starts a run of a template', async () => {
    const { code, stdout } = await plane.cli(['trigger', 'nightly', '--param', 'region=ap'])
    expect(code).toBe(0)
    expect((await workflow(plane, stdout.trim())).spec.parameters.region).toBe('ap')
  })

  it('reruns a plain Workflow with its parameters merged', async () => {
    await create(plane, 'workflows', aWorkflow('adhoc', ['one'], { spec: { parameters: { a: '1', b: '2' } } }))
    const { code, stdout } = await plane.cli(['trigger', 'adhoc', '--param', 'b=3'])
    expect(code).toBe(0)
    expect(stdout).toBe('workflow adhoc rerun requested\n')
    const wf = await workflow(plane, 'adhoc')
    expect(wf.spec.parameters).toEqual({ a: '1', b: '3' })
    expect(Date.parse(wf.metadata.annotations['purko.io/rerun'])).not.toBeNaN()
  })
})

describe('kinetic approve and deny', () => {
  beforeAll(async () => {
    for (const name of ['gate', 'gate2']) {
      await create(plane, 'workflows', aWorkflow(name, ['build', 'deploy<build']))
      await setStatus(plane, name, {
        phase: 'Running', runId: await currentRunOf(plane, name),
        stepStatuses: [{ name: 'build', phase: 'Succeeded' }, { name: 'deploy', phase: 'Pending', error: APPROVAL_WAIT }],
      })
    }
  })

  it('approve writes purko.io/approve-<step>', async () => {
    const { code, stdout } = await plane.cli(['approve', 'gate', 'deploy'])
    expect(code).toBe(0)
    expect(stdout).toBe('step deploy of workflow gate approved\n')
    expect((await workflow(plane, 'gate')).metadata.annotations).toMatchObject({ 'purko.io/approve-deploy': 'true' })
  })

  it('deny writes purko.io/deny-<step> and says a reason needs run-control', async () => {
    const { code, stderr } = await plane.cli(['deny', 'gate2', 'deploy', '--reason', 'not today'])
    expect(code).toBe(0)
    expect(stderr).toContain('--reason is recorded only through run-control')
    expect((await workflow(plane, 'gate2')).metadata.annotations).toMatchObject({ 'purko.io/deny-deploy': 'true' })
  })

  it.each([
    ['a step that does not exist', ['approve', 'gate', 'ship'], 'step ship not found in workflow gate (steps: build, deploy)'],
    ['a step that already finished', ['deny', 'gate', 'build'], 'step build of workflow gate already finished (Succeeded); nothing to deny'],
    ['a missing workflow', ['approve', 'ghost', 'deploy'], 'workflow ghost not found in namespace ai-agents'],
  ])('refuses %s with exit 1 and writes nothing', async (_, argv, message) => {
    const before = await workflow(plane, 'gate')
    const { code, stderr } = await plane.cli(argv)
    expect(code).toBe(1)
    expect(stderr).toBe(`error: ${message}\n`)
    expect((await workflow(plane, 'gate')).metadata.resourceVersion).toBe(before.metadata.resourceVersion)
  })

  it('refuses a step that already started, as run-control does, and reads a rerun about to start as not started', async () => {
    await create(plane, 'workflows', aWorkflow('busy', ['build', 'deploy<build']))
    await setStatus(plane, 'busy', { phase: 'Running', runId: await currentRunOf(plane, 'busy'), stepStatuses: [{ name: 'build', phase: 'Running' }] })
    expect(await plane.cli(['approve', 'busy', 'build'])).toMatchObject({ code: 1, stderr: 'error: step build of workflow busy already started (Running); nothing to approve\n' })
    // The status of an earlier run (a rerun not picked up yet): the new run's steps have not started.
    await setStatus(plane, 'busy', { phase: 'Succeeded', runId: 'an-earlier-run', stepStatuses: [{ name: 'build', phase: 'Succeeded' }] })
    expect((await plane.cli(['approve', 'busy', 'build'])).code).toBe(0)
  })

  it('decides steps of a scheduled Workflow without the template annotation: it runs itself too', async () => {
    await create(plane, 'workflows', aWorkflow('weekly', ['review'], { spec: { trigger: { schedule: { cron: '0 9 * * 1', suspend: true } } } }))
    expect((await plane.cli(['approve', 'weekly', 'review'])).code).toBe(0)
    expect((await workflow(plane, 'weekly')).metadata.annotations).toMatchObject({ 'purko.io/approve-review': 'true' })
  })

  it('refuses a decision on a run that already ended', async () => {
    await create(plane, 'workflows', aWorkflow('ended', ['build', 'deploy<build']))
    await setStatus(plane, 'ended', { phase: 'Cancelled', runId: await currentRunOf(plane, 'ended'), stepStatuses: [{ name: 'build', phase: 'Succeeded' }, { name: 'deploy', phase: 'Pending' }] })
    const { code, stderr } = await plane.cli(['approve', 'ended', 'deploy'])
    expect(code).toBe(1)
    expect(stderr).toContain('workflow ended already finished (Cancelled)')
  })
})

describe('kinetic cancel and rerun', () => {
  it('cancel writes purko.io/cancel on a run in progress and refuses a finished one', async () => {
    await create(plane, 'workflows', aWorkflow('long', ['a']))
    await setStatus(plane, 'long', { phase: 'Running', runId: await currentRunOf(plane, 'long'), stepStatuses: [{ name: 'a', phase: 'Running' }] })
    const ok = await plane.cli(['cancel', 'long'])
    expect(ok).toEqual({ code: 0, stdout: 'workflow long cancel requested\n', stderr: '' })
    expect((await workflow(plane, 'long')).metadata.annotations['purko.io/cancel']).toBe('true')

    await setStatus(plane, 'long', { phase: 'Cancelled', runId: await currentRunOf(plane, 'long') })
    const again = await plane.cli(['cancel', 'long'])
    expect(again.code).toBe(1)
    expect(again.stderr).toBe('error: workflow long already finished (Cancelled); nothing to cancel\n')
  })

  it('cancel refuses a template', async () => {
    const { code, stderr } = await plane.cli(['cancel', 'nightly'])
    expect(code).toBe(1)
    expect(stderr).toContain('is a template')
  })

  it('rerun sets a new purko.io/rerun, clears the last run\'s cancel and decisions, merges parameters', async () => {
    await create(plane, 'workflows', {
      ...aWorkflow('again', ['a', 'b<a'], { spec: { parameters: { x: '1' } } }),
      metadata: { name: 'again', annotations: { 'purko.io/cancel': 'true', 'purko.io/approve-b': 'true', 'kinetic.dev/decision-b': '{}', 'team.example/keep': 'yes' } },
    })
    await setStatus(plane, 'again', { phase: 'Cancelled', runId: 'r1' })
    const { code, stdout } = await plane.cli(['rerun', 'again', '--param', 'y=2'], { now: () => new Date('2026-03-01T10:00:00.123Z') })
    expect(code).toBe(0)
    expect(stdout).toBe('workflow again rerun requested\n')
    const wf = await workflow(plane, 'again')
    expect(wf.metadata.annotations).toEqual({ 'purko.io/rerun': '2026-03-01T10:00:00.123Z', 'team.example/keep': 'yes' })
    expect(wf.spec.parameters).toEqual({ x: '1', y: '2' })
  })

  it('rerun of a template says to use run', async () => {
    const { code, stderr } = await plane.cli(['rerun', 'nightly'])
    expect(code).toBe(1)
    expect(stderr).toContain('start a run with `kinetic run nightly`')
  })
})

describe('run-control (--server or KINETIC_RUN_CONTROL_URL)', () => {
  let server: Server
  let url: string
  const requests: { method?: string; path?: string; authorization?: string; body: unknown }[] = []
  let answer: { status: number; body: unknown } = { status: 200, body: { status: 'ok' } }

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let body = ''
      req.on('data', (c) => { body += c })
      req.on('end', () => {
        requests.push({ method: req.method, path: req.url, authorization: req.headers.authorization, body: body ? JSON.parse(body) : undefined })
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('approve POSTs the step and reason with the kubeconfig user\'s bearer token, and writes no annotation', async () => {
    answer = { status: 200, body: { status: 'approved' } }
    await create(plane, 'workflows', aWorkflow('remote', ['build', 'deploy<build']))
    const before = await workflow(plane, 'remote')
    const { code, stdout } = await plane.cli(['approve', 'remote', 'deploy', '--reason', 'change window', '--server', `${url}/`])
    expect(code).toBe(0)
    expect(stdout).toBe('step deploy of workflow remote approved\n')
    expect(requests.at(-1)).toEqual({ method: 'POST', path: '/api/approve/ai-agents/remote/deploy', authorization: 'Bearer alice-token', body: { reason: 'change window' } })
    expect((await workflow(plane, 'remote')).metadata.resourceVersion).toBe(before.metadata.resourceVersion)
  })

  it('deny, cancel and rerun go to their run-control paths when KINETIC_RUN_CONTROL_URL is set', async () => {
    const env = (e: Record<string, string>) => ({ env: { KUBECONFIG: plane.kubeconfigPath, KINETIC_RUN_CONTROL_URL: url, ...e } })
    expect((await plane.cli(['deny', 'remote', 'deploy'], env({}))).code).toBe(0)
    expect((await plane.cli(['cancel', 'remote', '-n', 'team-b'], env({}))).code).toBe(0)
    expect((await plane.cli(['rerun', 'remote', '--param', 'k=v'], env({}))).code).toBe(0)
    expect(requests.slice(-3).map((r) => [r.path, r.body])).toEqual([
      ['/api/deny/ai-agents/remote/deploy', {}],
      ['/api/cancel/team-b/remote', {}],
      ['/api/rerun/ai-agents/remote', { parameters: { k: 'v' } }],
    ])
  })

  it('says which permission run-control refused, and when it cannot be reached', async () => {
    answer = { status: 403, body: { error: 'forbidden' } }
    const refused = await plane.cli(['approve', 'remote', 'deploy', '--server', url])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('forbidden by run-control: user "alice" needs the custom verb "approve" on workflows.purko.io in namespace ai-agents')
    const down = await plane.cli(['cancel', 'remote', '--server', 'http://127.0.0.1:1'])
    expect(down.code).toBe(1)
    expect(down.stderr).toContain('cannot reach run-control at http://127.0.0.1:1')
  })
})

describe('kinetic logs', () => {
  async function podWithLog(job: string, log: string): Promise<string> {
    const pod = `${job}-pod`
    await core.createNamespacedPod({ namespace: 'ai-agents', body: { metadata: { name: pod, labels: { 'job-name': job } }, spec: { nodeName: 'node-1', containers: [{ name: 'step-executor', image: 'x' }] } } })
    plane.api.store.appendPodLog('ai-agents', pod, log)
    return pod
  }

  beforeAll(async () => {
    await create(plane, 'workflows', aWorkflow('logged', ['fetch', 'sum<fetch', 'later<sum']))
    await podWithLog('logged-fetch-r1-0', 'fetching\ndone fetching\n')
    await podWithLog('logged-sum-r1-0', 'adding\n')
    await setStatus(plane, 'logged', {
      phase: 'Running', runId: 'r1',
      stepStatuses: [{ name: 'fetch', phase: 'Succeeded', jobName: 'logged-fetch-r1-0' }, { name: 'sum', phase: 'Running', jobName: 'logged-sum-r1-0' }],
    })
  })

  it('prints one step\'s pod log', async () => {
    expect(await plane.cli(['logs', 'logged', 'fetch'])).toEqual({ code: 0, stdout: 'fetching\ndone fetching\n', stderr: '' })
  })

  it('prints every started step in order, prefixed, without a step', async () => {
    const { code, stdout } = await plane.cli(['logs', 'logged'])
    expect(code).toBe(0)
    expect(stdout).toBe('[fetch] fetching\n[fetch] done fetching\n[sum] adding\n')
  })

  it('refuses an unknown step, and a step without a Job unless following', async () => {
    const unknown = await plane.cli(['logs', 'logged', 'nope'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('step nope not found in workflow logged (steps: fetch, sum, later)')
    const waiting = await plane.cli(['logs', 'logged', 'later'])
    expect(waiting.code).toBe(1)
    expect(waiting.stderr).toContain('step later of workflow logged has no Job (not started); use -f to wait for it')
  })

  it('follows with -f until the step finishes', async () => {
    let polls = 0
    const result = plane.cli(['logs', 'logged', 'sum', '-f'], {
      stdout: () => {
        polls++
        if (polls === 1) {
          plane.api.store.appendPodLog('ai-agents', 'logged-sum-r1-0-pod', 'total 42\n')
          void setStatus(plane, 'logged', {
            phase: 'Succeeded', runId: 'r1',
            stepStatuses: [{ name: 'fetch', phase: 'Succeeded', jobName: 'logged-fetch-r1-0' }, { name: 'sum', phase: 'Succeeded', jobName: 'logged-sum-r1-0' }, { name: 'later', phase: 'Skipped' }],
          })
        }
      },
    })
    expect(await result).toEqual({ code: 0, stdout: 'adding\ntotal 42\n', stderr: '' })
  })
})

describe('kinetic agents', () => {
  it('lists Agents with autonomy, Shu-Ha-Ri level, phase and metrics; -o json gives a List', async () => {
    await create(plane, 'agents', { apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer' }, spec: { model: { provider: 'offline', name: 'scripted' }, autonomyLevel: 'supervised' } })
    const agent = await plane.custom.getNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: 'ai-agents', plural: 'agents', name: 'writer' })
    await plane.custom.replaceNamespacedCustomObjectStatus({
      group: 'purko.io', version: 'v1alpha1', namespace: 'ai-agents', plural: 'agents', name: 'writer',
      body: {
        ...agent,
        status: {
          phase: 'Ready',
          metrics: { successRate: 0.875, totalInvocations: 8, totalCostUSD: 0.0123, lastInvocationTime: '2026-01-01T00:00:00Z' },
          shuHaRi: { currentLevel: 'ha', readyForPromotion: true, promotionProgress: { nextLevel: 'ri' } },
        },
      },
    })
    const { code, stdout } = await plane.cli(['agents'], { now: () => new Date('2026-01-01T00:05:00Z') })
    expect(code).toBe(0)
    expect(stdout).toBe(
      'NAME     AUTONOMY     SHU-HA-RI   PROMOTION      PHASE   SUCCESS   RUNS   COST      LAST RUN\n'
      + 'writer   supervised   ha          ready for ri   Ready   87.5%     8      $0.0123   5m ago\n',
    )
    const json = JSON.parse((await plane.cli(['agents', '-o', 'json'])).stdout)
    expect(json).toMatchObject({ kind: 'List', items: [{ metadata: { name: 'writer' }, status: { phase: 'Ready' } }] })
    const empty = await plane.cli(['agents', '-n', 'team-b'])
    expect(empty).toEqual({ code: 0, stdout: '', stderr: 'no Agents found in namespace team-b\n' })
    const all = await plane.cli(['agents', '-A'])
    expect(all.stdout.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME/)
    expect(all.stdout).toContain('ai-agents   writer')
  })
})

describe('--help', () => {
  it.each(COMMANDS.map((c) => c.name))('%s --help prints its usage and flags and exits 0 without a kubeconfig', async (name) => {
    const { code, stdout, stderr } = await plane.cli([name, '--help'], { env: {} })
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain(`Usage:\n  kinetic ${name}`)
    expect(stdout).toContain('Global flags:')
    expect((await plane.cli(['help', name], { env: {} })).stdout).toBe(stdout)
  })

  it('lists every command with no arguments (exit 2) and with --help (exit 0); --version prints the version', async () => {
    const bare = await plane.cli([], { env: {} })
    expect(bare.code).toBe(2)
    for (const c of COMMANDS) expect(bare.stderr).toContain(`  ${c.name} `)
    expect((await plane.cli(['--help'], { env: {} })).code).toBe(0)
    expect((await plane.cli(['--version'], { env: {} })).stdout).toMatch(/^\d+\.\d+\.\d+\n$/)
    const unknown = await plane.cli(['frobnicate'], { env: {} })
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('unknown command "frobnicate"')
  })

  it('names the kn plugin in help when started as kn-kinetic', async () => {
    const { stdout } = await plane.cli(['status', '--help'], { env: {}, programName: 'kn kinetic' })
    expect(stdout).toContain('Usage:\n  kn kinetic status <workflow> [flags]')
    expect(stdout).toContain('  kn kinetic status incident-42')
  })
})

describe('-o yaml', () => {
  it('prints the Workflow as YAML for status', async () => {
    const { code, stdout } = await plane.cli(['status', 'gate', '-o', 'yaml'])
    expect(code).toBe(0)
    expect(parse(stdout)).toMatchObject({ kind: 'Workflow', metadata: { name: 'gate' }, status: { phase: 'Running' } })
    const bad = await plane.cli(['status', 'gate', '-o', 'wide'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('unknown output format "wide"')
  })
})
