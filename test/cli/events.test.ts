import type { CloudEvent } from 'cloudevents'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { announce } from '../../shared/engine/controller.js'
import { type Transition } from '../../shared/core/plan.js'
import { kineticEventsFor, type KineticEvents } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { testDeps } from '../support/engine-deps.js'
import { aWorkflow, create, startCliPlane, type CliPlane } from './harness.js'

let plane: CliPlane
const published: CloudEvent<Record<string, unknown>>[] = []
/** Captures what the functions would send to the Broker. */
const capture: KineticEvents = {
  async publish(object, seed, transitions) {
    published.push(...kineticEventsFor('/kinetic/workflow-changed', object, seed, transitions))
  },
}

beforeAll(async () => {
  plane = await startCliPlane()
})
afterAll(async () => {
  await plane.close()
})

const transitions: Transition[] = [
  { kind: 'run.started', type: 'Normal', reason: 'RunStarted', message: 'Started run r1 of 2 steps', record: true },
  { kind: 'step.started', type: 'Normal', reason: 'StepStarted', message: 'Started step draft', record: false },
  { kind: 'step.waiting', type: 'Normal', reason: 'ApprovalRequired', message: 'Waiting for human approval (set annotation purko.io/approve-publish=true)', record: true, fieldPath: 'spec.steps{publish}' },
]

describe('kinetic events', () => {
  beforeAll(async () => {
    const raw = await create(plane, 'workflows', aWorkflow('essay', ['draft', 'publish<draft']))
    const deps = { ...testDeps(new KubeClient(plane.api.kubeConfigObject()), { now: new Date('2026-01-01T00:00:00Z') }), events: capture }
    await announce(deps, 'Workflow', raw as Workflow, 'r1', transitions)
  })

  it('prints each recorded transition as the CloudEvent the functions published for it (-o json: structured mode, one per line)', async () => {
    const { code, stdout } = await plane.cli(['events', 'essay', '-o', 'json'])
    expect(code).toBe(0)
    const lines = stdout.trimEnd().split('\n').map((l) => JSON.parse(l))
    const recorded = published.filter((e) => e.type !== 'dev.kinetic.workflow.step.started')
    expect(lines.map((l) => [l.id, l.type])).toEqual(recorded.map((e) => [e.id, e.type]))
    expect(lines[1]).toEqual({
      specversion: '1.0',
      id: recorded[1]!.id,
      type: 'dev.kinetic.workflow.step.waiting',
      source: '/kinetic/kinetic-workflow',
      subject: '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/essay',
      time: '2026-01-01T00:00:00.000Z',
      datacontenttype: 'application/json',
      data: {
        namespace: 'ai-agents', workflow: 'essay', reason: 'ApprovalRequired', severity: 'Normal', fieldPath: 'spec.steps{publish}',
        message: 'Waiting for human approval (set annotation purko.io/approve-publish=true)',
      },
    })
    expect(recorded[1]!.subject).toBe(lines[1].subject)
  })

  it('prints a table by default and a YAML stream with -o yaml', async () => {
    const { code, stdout } = await plane.cli(['events', 'essay'])
    expect(code).toBe(0)
    const rows = stdout.trimEnd().split('\n')
    expect(rows[0]).toMatch(/^TIME\s+TYPE\s+ID\s+MESSAGE$/)
    expect(rows[1]).toMatch(/^2026-01-01T00:00:00.000Z\s+dev\.kinetic\.workflow\.run\.started\s+[0-9a-f]{12}\s+Started run r1 of 2 steps$/)
    expect(rows).toHaveLength(3)
    const yaml = (await plane.cli(['events', 'essay', '-o', 'yaml'])).stdout
    expect(yaml.match(/^---$/gm)).toHaveLength(2)
    expect(yaml).toContain('type: dev.kinetic.workflow.step.waiting')
  })

  it('follows with -f: new Events are printed once each until Ctrl-C', async () => {
    const controller = new AbortController()
    let writes = 0
    const deps = { ...testDeps(new KubeClient(plane.api.kubeConfigObject()), { now: new Date('2026-01-01T00:01:00Z') }), events: capture }
    const followed = plane.cli(['events', 'essay', '-f', '-o', 'json'], {
      signal: controller.signal,
      stdout: () => {
        writes++
        if (writes === 1) void announce(deps, 'Workflow', { metadata: { name: 'essay', namespace: 'ai-agents' } } as Workflow, 'r1', [{ kind: 'run.finished', type: 'Warning', reason: 'RunFailed', message: 'Step publish denied', record: true }])
        else controller.abort()
      },
    })
    const { code, stdout } = await followed
    expect(code).toBe(0)
    const types = stdout.trimEnd().split('\n').map((l) => JSON.parse(l).type)
    expect(types).toEqual(['dev.kinetic.workflow.run.started', 'dev.kinetic.workflow.step.waiting', 'dev.kinetic.workflow.run.finished'])
  })

  it('says so when a Workflow has no Events, and names a missing Workflow', async () => {
    await create(plane, 'workflows', aWorkflow('quiet', ['a']))
    expect(await plane.cli(['events', 'quiet'])).toEqual({ code: 0, stdout: '', stderr: 'no events for workflow quiet in namespace ai-agents\n' })
    expect((await plane.cli(['events', 'ghost'])).stderr).toBe('error: workflow ghost not found in namespace ai-agents\n')
  })
})
