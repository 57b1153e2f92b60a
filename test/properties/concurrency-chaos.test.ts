import fc from 'fast-check'
import type { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { createApp as stepJobFinished } from '../../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { TransientError } from '../../shared/core/errors.js'
import { isTerminalPhase } from '../../shared/workflow/plan/run-status.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'
import { propertyRuns } from '../support/property-runs.js'

/**
 * N runs of one template under forbid (wait or skip) or allow with maxParallel k, driven by the
 * three functions over the embedded API server while events are dropped, duplicated and reordered,
 * status writes fail after the children were written, Jobs finish in random order and resync
 * ticks come now and then. The properties: never more runs with live Jobs (or recorded as
 * active) than the limit, every run ends, and no run ever runs twice.
 */

interface Scenario {
  runs: { minute: number; steps: number }[]
  policy: 'forbid' | 'allow'
  limit: number
  whenBusy: 'wait' | 'skip'
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  // Equal minutes on purpose: the queue breaks ties by name.
  runs: fc.array(fc.record({ minute: fc.integer({ min: 0, max: 2 }), steps: fc.integer({ min: 1, max: 2 }) }), { minLength: 2, maxLength: 5 }),
  policy: fc.constantFrom('forbid' as const, 'allow' as const),
  limit: fc.integer({ min: 1, max: 3 }),
  whenBusy: fc.constantFrom('wait' as const, 'wait' as const, 'skip' as const),
})

interface Chaos { drop: number; duplicate: number; crash: number; seed: number }

function runsFor(s: Scenario): Workflow[] {
  return s.runs.map((r, i) => {
    const name = `tpl-run-${i}`
    const steps = Array.from({ length: r.steps }, (_, j) => ({ name: `s${j}`, ...(j > 0 ? { dependsOn: [`s${j - 1}`] } : {}) }))
    const concurrency = s.policy === 'forbid'
      ? { policy: i % 2 === 0 ? 'forbid' : 'Forbid', whenBusy: s.whenBusy }
      : { policy: 'allow', maxParallel: s.limit }
    const wf = workflowOf(name, steps, { concurrency })
    wf.metadata.creationTimestamp = new Date(Date.UTC(2026, 0, 1, 0, r.minute)).toISOString()
    wf.metadata.annotations = { 'purko.io/workflow-template': 'tpl' }
    wf.metadata.labels = { 'kinetic.dev/template': 'tpl' }
    return wf
  })
}

function random(seed: number): () => number {
  let x = seed | 1
  return () => {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5
    return ((x >>> 0) % 1_000_000) / 1_000_000
  }
}

type Pending = { fn: 'workflow' | 'job' | 'tick'; data: unknown }

async function run(s: Scenario, chaos: Chaos): Promise<void> {
  const limit = s.policy === 'forbid' ? 1 : s.limit
  const workflows = runsFor(s)
  const names = workflows.map((w) => w.metadata.name!)
  const kube = new EmbeddedKube({ workflows, agents: [agentOf('helper')] })
  const clock = { now: new Date('2026-01-01T00:05:00Z') }
  const deps = testDeps(kube, clock)
  const apps: Record<Pending['fn'], Hono> = { workflow: workflowChanged(deps), job: stepJobFinished(deps), tick: resyncTick(deps) }
  const rand = random(chaos.seed)
  const queue: Pending[] = []
  const emit = (event: Pending) => {
    if (rand() < chaos.drop) return
    queue.push(event)
    if (rand() < chaos.duplicate) queue.push(event)
  }
  const finishedJobs = new Set<string>()
  const lastRv = new Map<string, string>()
  for (const name of names) emit({ fn: 'workflow', data: kube.workflow('team', name) })

  const liveRuns = () => new Set([...kube.jobs.values()]
    .filter((j) => !finishedJobs.has(j.metadata!.name!))
    .map((j) => j.metadata!.labels!['purko.io/workflow']!))
  const recordedActive = () => names.filter((n) => {
    const st = kube.workflow('team', n).status
    return st?.runId !== undefined && !isTerminalPhase(st.phase)
  })

  let done = false
  for (let round = 0; round < 1500 && !done; round++) {
    clock.now = new Date(clock.now.getTime() + 1000)
    const active = [...kube.jobs.values()].filter((j) => !finishedJobs.has(j.metadata!.name!))
    if (active.length > 0 && rand() < 0.5) {
      const job = active[Math.floor(rand() * active.length)]!
      finishedJobs.add(job.metadata!.name!)
      emit({ fn: 'job', data: kube.finishJob(job.metadata!.name!, 'Succeeded', 'OUTPUT:{"ok":true}') })
    }
    if (queue.length > 0) {
      if (rand() < chaos.crash) kube.failNext('patchWorkflowStatus', new TransientError('etcd timeout'))
      const event = queue.splice(Math.floor(rand() * queue.length), 1)[0]!
      const res = await deliver(apps[event.fn], event.fn === 'tick' ? PING : event.fn === 'workflow' && round < names.length ? RESOURCE_ADD : RESOURCE_UPDATE, event.data)
      if (res.status >= 500 || res.status === 409) emit(event)
      else expect(res.status).toBe(202)
    }
    expect(liveRuns().size, 'runs with live Jobs').toBeLessThanOrEqual(limit)
    expect(recordedActive().length, 'runs recorded as active').toBeLessThanOrEqual(limit)
    for (const name of names) {
      const wf = kube.workflow('team', name)
      if (wf.metadata.resourceVersion !== lastRv.get(name)) {
        lastRv.set(name, wf.metadata.resourceVersion!)
        emit({ fn: 'workflow', data: wf })
      }
    }
    if (rand() < 0.05 || queue.length === 0) queue.push({ fn: 'tick', data: { reason: 'resync' } })
    done = names.every((n) => isTerminalPhase(kube.workflow('team', n).status?.phase))
      && [...kube.jobs.values()].every((j) => finishedJobs.has(j.metadata!.name!))
  }

  const phases = names.map((n) => kube.workflow('team', n).status?.phase)
  expect(done, `every run ends (phases ${phases.join(', ')})`).toBe(true)
  // Each run ran at most once: one Job per step, never twice.
  expect(new Set(kube.createdJobs).size).toBe(kube.createdJobs.length)
  for (const [i, name] of names.entries()) {
    const jobs = kube.createdJobs.filter((j) => j.startsWith(`${name}-`))
    const phase = kube.workflow('team', name).status?.phase
    if (phase === 'Succeeded') expect(jobs).toHaveLength(s.runs[i]!.steps)
    else expect(phase).toBe('Cancelled')
  }
  // Only forbid with whenBusy skip ends runs without running them; waiting policies run them all.
  if (!(s.policy === 'forbid' && s.whenBusy === 'skip')) expect(phases.every((p) => p === 'Succeeded')).toBe(true)
}

describe('concurrency under event chaos', () => {
  it('never has more runs of a template active than its limit, and every run ends, despite lost, duplicated and reordered events', async () => {
    await fc.assert(
      fc.asyncProperty(
        scenario,
        fc.record({
          drop: fc.double({ min: 0, max: 0.4, noNaN: true }),
          duplicate: fc.double({ min: 0, max: 0.5, noNaN: true }),
          crash: fc.double({ min: 0, max: 0.3, noNaN: true }),
          seed: fc.integer({ min: 1, max: 2 ** 30 }),
        }),
        async (s, chaos) => run(s, chaos),
      ),
      { numRuns: propertyRuns(40) },
    )
  }, 180_000)
})
