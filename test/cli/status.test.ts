import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { aWorkflow, create, setStatus, startCliPlane, workflow, type CliPlane } from './harness.js'

let plane: CliPlane
const NOW = new Date('2026-01-01T00:10:00Z')

beforeAll(async () => {
  plane = await startCliPlane()
})
afterAll(async () => {
  await plane.close()
})

describe('kinetic status', () => {
  it('draws a finished run as a tree of its steps in dependency order with phases, durations, retries and errors', async () => {
    await create(plane, 'workflows', aWorkflow('pipeline', ['fetch', 'lint<fetch', 'test<fetch', 'package<lint,test', 'notify']))
    await setStatus(plane, 'pipeline', {
      phase: 'Failed', runId: 'run-1', message: 'Step package failed',
      startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:04:30Z',
      totalSteps: 5, completedSteps: 3, failedSteps: 1,
      stepStatuses: [
        { name: 'fetch', phase: 'Succeeded', startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:00:12Z' },
        { name: 'lint', phase: 'Succeeded', startTime: '2026-01-01T00:00:12Z', completionTime: '2026-01-01T00:01:00Z' },
        { name: 'test', phase: 'Succeeded', retryCount: 2, startTime: '2026-01-01T00:00:12Z', completionTime: '2026-01-01T00:03:00Z' },
        { name: 'package', phase: 'Failed', startTime: '2026-01-01T00:03:00Z', completionTime: '2026-01-01T00:04:30Z', error: 'exit code 1\nstack...' },
        { name: 'notify', phase: 'Skipped' },
      ],
    })
    const { code, stdout } = await plane.cli(['status', 'pipeline'], { now: () => NOW })
    expect(code).toBe(0)
    expect(stdout).toBe([
      'workflow ai-agents/pipeline   Failed   4m30s   run run-1',
      '  started 10m ago, finished 5m30s ago',
      '  message: Step package failed',
      '  steps: 3/5 done, 1 failed',
      '',
      'STEP               PHASE       DURATION   NOTES',
      '├─ fetch           Succeeded   12s',
      '│  ├─ lint         Succeeded   48s',
      '│  └─ test         Succeeded   2m48s      retries 2',
      '│     └─ package   Failed      1m30s      error: exit code 1; after lint',
      '└─ notify          Skipped',
      '',
    ].join('\n'))
  })

  it('shows what a waiting step waits for, that a person must approve, and a queued run\'s place', async () => {
    await create(plane, 'workflows', {
      ...aWorkflow('nightly-run-0000abcd', ['build', 'deploy<build', 'audit']),
      metadata: { name: 'nightly-run-0000abcd', annotations: { 'purko.io/workflow-template': 'nightly', 'purko.io/trigger-type': 'manual', 'purko.io/trigger-source': 'alice' } },
    })
    await setStatus(plane, 'nightly-run-0000abcd', {
      phase: 'Pending', queuePosition: 2, message: 'Queued: position 2; 1 run(s) of template nightly active (concurrency forbid, limit 1)',
      stepStatuses: [],
    })
    const queued = await plane.cli(['status', 'nightly-run-0000abcd'], { now: () => NOW })
    expect(queued.stdout).toContain('  run of template nightly, manual (alice)\n  queued: position 2\n  message: Queued: position 2; 1 run(s) of template nightly active')

    await setStatus(plane, 'nightly-run-0000abcd', {
      phase: 'Running', runId: 'r2', startTime: '2026-01-01T00:08:00Z',
      stepStatuses: [
        { name: 'build', phase: 'Running', startTime: '2026-01-01T00:09:15Z' },
        { name: 'deploy', phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-deploy=true)' },
        { name: 'audit', phase: 'Pending', error: 'Agent "auditor" not found for step "audit"', nextAttemptAt: '2026-01-01T00:11:00Z' },
      ],
    })
    const { stdout } = await plane.cli(['status', 'nightly-run-0000abcd'], { now: () => NOW })
    expect(stdout).toContain([
      '├─ build       Running   45s',
      '│  └─ deploy   Pending              approval needed: kinetic approve nightly-run-0000abcd deploy',
      '└─ audit       Pending              next attempt in 1m; waiting: Agent "auditor" not found for step "audit"',
    ].join('\n'))
  })

  it('shows a template\'s schedule, next run, last schedule, active and recent runs', async () => {
    await create(plane, 'workflows', aWorkflow('digest', ['collect'], {
      spec: { description: 'Weekday digest', trigger: { schedule: { cron: '0 7 * * 1-5', timezone: 'Europe/Berlin' } }, concurrency: { policy: 'forbid', whenBusy: 'wait' } },
    }))
    await setStatus(plane, 'digest', {
      nextRunTime: '2026-01-02T06:00:00Z', lastScheduleTime: '2026-01-01T06:00:00Z', lastTriggerTime: '2026-01-01T06:00:01Z', activeRuns: 1,
      recentRuns: [
        { name: 'digest-sched-69560a60', phase: 'Running', trigger: 'schedule', startTime: '2026-01-01T06:00:02Z' },
        { name: 'digest-run-1a2b3c4d', phase: 'Succeeded', trigger: 'manual', startTime: '2025-12-31T09:00:00Z', completionTime: '2025-12-31T09:02:00Z' },
      ],
      conditions: [{ type: 'ScheduleValid', status: 'True', reason: 'Valid', lastTransitionTime: '2026-01-01T00:00:00Z', message: '' }],
    })
    const { code, stdout } = await plane.cli(['status', 'digest'], { now: () => new Date('2026-01-01T08:00:00Z') })
    expect(code).toBe(0)
    expect(stdout).toBe([
      'template ai-agents/digest',
      '  description:    Weekday digest',
      '  schedule:       0 7 * * 1-5 (Europe/Berlin)',
      '  next run:       2026-01-02T06:00:00Z (in 22h)',
      '  last schedule:  2026-01-01T06:00:00Z (2h ago)',
      '  last trigger:   2026-01-01T06:00:01Z (1h59m ago)',
      '  active runs:    1',
      '  concurrency:    forbid when busy: wait',
      '',
      'recent runs:',
      'NAME                    PHASE       TRIGGER    STARTED     DURATION',
      'digest-sched-69560a60   Running     schedule   1h59m ago   1h59m',
      'digest-run-1a2b3c4d     Succeeded   manual     23h ago     2m',
      '',
    ].join('\n'))
  })

  it('--watch redraws on each change and stops when the run ends; watch is the same', async () => {
    await create(plane, 'workflows', aWorkflow('moving', ['a', 'b<a']))
    await setStatus(plane, 'moving', { phase: 'Running', runId: 'r', stepStatuses: [{ name: 'a', phase: 'Running' }] })
    let draws = 0
    const steps = [
      { phase: 'Running', runId: 'r', stepStatuses: [{ name: 'a', phase: 'Succeeded' }, { name: 'b', phase: 'Running' }] },
      { phase: 'Succeeded', runId: 'r', stepStatuses: [{ name: 'a', phase: 'Succeeded' }, { name: 'b', phase: 'Succeeded' }] },
    ]
    const advance = () => {
      const next = steps[draws++]
      if (next) void setStatus(plane, 'moving', next)
    }
    const watched = await plane.cli(['status', 'moving', '--watch'], { now: () => NOW, stdout: advance })
    expect(watched.code).toBe(0)
    const frames = watched.stdout.split(/\n(?=workflow ai-agents\/moving)/)
    expect(frames.map((f) => f.split('\n')[0])).toEqual([
      'workflow ai-agents/moving   Running   run r',
      'workflow ai-agents/moving   Running   run r',
      'workflow ai-agents/moving   Succeeded   run r',
    ])
    expect(frames[1]).toContain('   └─ b   Running')

    const controller = new AbortController()
    await setStatus(plane, 'moving', { phase: 'Running', runId: 'r2', stepStatuses: [] })
    const tty = plane.cli(['watch', 'moving'], { isTTY: true, signal: controller.signal, stdout: () => controller.abort() })
    const result = await tty
    expect(result.code).toBe(0)
    expect(result.stdout.startsWith('\u001b[H\u001b[2Jworkflow ai-agents/moving   Running')).toBe(true)
    expect((await workflow(plane, 'moving')).status.phase).toBe('Running')
  })
})
