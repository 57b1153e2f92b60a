import { describe, expect, it } from 'vitest'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { createApp as stepJobFinished } from '../../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { reconcileWorkflow } from '../../shared/workflow/controller.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

/** A run of template `nightly` with one step, created `minute` minutes after midnight. */
function runOf(name: string, minute: number, concurrency: Record<string, unknown> | undefined, template: string | null = 'nightly'): Workflow {
  const wf = workflowOf(name, [{ name: 'work' }], concurrency ? { concurrency } : {})
  wf.metadata.creationTimestamp = new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString()
  if (template !== null) {
    wf.metadata.annotations = { 'purko.io/workflow-template': template, 'purko.io/trigger-type': 'schedule' }
    wf.metadata.labels = { 'kinetic.dev/template': template }
  }
  return wf
}

function setup(runs: Workflow[]) {
  const kube = new EmbeddedKube({ workflows: runs, agents: [agentOf('helper')] })
  const deps = testDeps(kube)
  let lists = 0
  const list = kube.listWorkflowsIn.bind(kube)
  kube.listWorkflowsIn = async (namespace, labels) => {
    lists++
    return list(namespace, labels)
  }
  return { kube, changed: workflowChanged(deps), finished: stepJobFinished(deps), tick: resyncTick(deps), lists: () => lists }
}

const jobOf = (kube: EmbeddedKube, run: string) => `${run}-work-${kube.workflow('team', run).status?.runId}`

describe('concurrency of a template\'s runs', () => {
  it('forbid queues the second run, says why once, and starts it in-process when the first one finishes', async () => {
    const { kube, changed, finished } = setup([runOf('r1', 0, { policy: 'forbid' }), runOf('r2', 1, { policy: 'forbid' })])
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r1'))
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r2'))

    const queued = kube.workflow('team', 'r2')
    expect(queued.status).toMatchObject({
      phase: 'Pending', queuePosition: 1,
      message: 'Queued: position 1; 1 run(s) of template nightly active (concurrency forbid, limit 1)',
    })
    expect(kube.createdJobs).toEqual([jobOf(kube, 'r1')])
    expect(kube.events.filter((e) => e.involvedObject.name === 'r2').map((e) => e.reason)).toEqual(['Queued'])

    // The echo of the queued status costs nothing.
    const calls = kube.calls
    expect((await deliver(changed, RESOURCE_UPDATE, queued)).status).toBe(202)
    expect(kube.calls).toBe(calls)

    // Re-evaluating it while the other run goes on (what each resync tick does) is a GET and a list.
    const writes = kube.writes.length
    expect((await reconcileWorkflow(testDeps(kube), 'team', 'r2', { kind: 'full' })).result).toBe('unchanged')
    expect(kube.calls - calls).toBe(2)
    expect(kube.writes.length).toBe(writes)

    const job = kube.finishJob(jobOf(kube, 'r1'), 'Succeeded', 'OUTPUT:{}')
    expect((await deliver(finished, RESOURCE_UPDATE, job)).status).toBe(202)

    expect(kube.workflow('team', 'r1').status?.phase).toBe('Succeeded')
    const started = kube.workflow('team', 'r2')
    expect(started.status).toMatchObject({ phase: 'Running' })
    expect(started.status?.queuePosition).toBeUndefined()
    expect(kube.createdJobs).toEqual([jobOf(kube, 'r1'), jobOf(kube, 'r2')])
  })

  it('still answers 202 when waking the queue fails, and the resync tick starts the queued run', async () => {
    const { kube, changed, finished, tick } = setup([runOf('r1', 0, { policy: 'forbid' }), runOf('r2', 1, { policy: 'forbid' })])
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r1'))
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r2'))
    kube.failNext('listWorkflowsIn', new TransientError('connection reset'))

    expect((await deliver(finished, RESOURCE_UPDATE, kube.finishJob(jobOf(kube, 'r1'), 'Succeeded', 'OUTPUT:{}'))).status).toBe(202)
    expect(kube.workflow('team', 'r1').status?.phase).toBe('Succeeded')
    expect(kube.workflow('team', 'r2').status?.phase).toBe('Pending')

    expect((await deliver(tick, PING, { reason: 'resync' })).status).toBe(202)
    expect(kube.workflow('team', 'r2').status?.phase).toBe('Running')
  })

  it('forbid with whenBusy skip ends the second run at once as Cancelled', async () => {
    const { kube, changed } = setup([runOf('r1', 0, { policy: 'forbid', whenBusy: 'skip' }), runOf('r2', 1, { policy: 'forbid', whenBusy: 'skip' })])
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r1'))
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r2'))

    const skipped = kube.workflow('team', 'r2')
    expect(skipped.status?.phase).toBe('Cancelled')
    expect(skipped.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Complete', reason: 'ConcurrencySkipped' }))
    expect(kube.createdJobs).toEqual([jobOf(kube, 'r1')])
  })

  it('replace cancels the active run, deletes its Job, and then starts the new one', async () => {
    const { kube, changed } = setup([runOf('r1', 0, { policy: 'replace' })])
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r1'))
    const oldJob = jobOf(kube, 'r1')
    expect(kube.createdJobs).toEqual([oldJob])
    kube.putWorkflow(runOf('r2', 1, { policy: 'replace' }))
    const before = kube.writes.length

    expect((await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r2'))).status).toBe(202)

    const replaced = kube.workflow('team', 'r1')
    expect(replaced.metadata.annotations).toMatchObject({ 'purko.io/cancel': 'true', 'kinetic.dev/cancel-reason': 'Replaced by run r2 (concurrency replace)' })
    expect(replaced.status).toMatchObject({ phase: 'Cancelled', message: 'Replaced by run r2 (concurrency replace)' })
    expect(replaced.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Complete', reason: 'ReplacedByConcurrency' }))
    expect([...kube.jobs.values()].map((j) => j.metadata?.name)).toEqual([jobOf(kube, 'r2')])
    expect(kube.writes.slice(before)).toEqual([
      'annotate Workflow/r1', `delete Job/${oldJob}`, 'status Workflow/r1',
      `create Job/${jobOf(kube, 'r2')}`, 'annotate Workflow/r2', 'status Workflow/r2',
      // r2 started: its arm of the resync alarm is a write even though r1 armed it already.
      'patch PingSource/resync-alarm',
    ])
  })

  it('replace re-reads a run it lost a race with once, and still cancels it', async () => {
    const { kube, changed } = setup([runOf('r1', 0, { policy: 'replace' })])
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r1'))
    expect(kube.workflow('team', 'r1').status?.phase).toBe('Running')
    kube.putWorkflow(runOf('r2', 1, { policy: 'replace' }))
    kube.failNext('patchWorkflowMetadata', new ConflictError('r1 was modified'))

    expect((await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r2'))).status).toBe(202)

    expect(kube.workflow('team', 'r1').status?.phase).toBe('Cancelled')
    expect(kube.workflow('team', 'r2').status?.phase).toBe('Running')
    expect(kube.jobs.size).toBe(1)
  })

  it('replace lets the newest run win when the older one is seen last', async () => {
    const { kube, changed } = setup([runOf('r1', 0, { policy: 'replace' }), runOf('r2', 1, { policy: 'replace' })])
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r2'))
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r1'))

    expect(kube.workflow('team', 'r2').status?.phase).toBe('Running')
    expect(kube.workflow('team', 'r1').status).toMatchObject({ phase: 'Cancelled', message: 'Replaced by run r2 (concurrency replace)' })
    expect(kube.createdJobs).toEqual([jobOf(kube, 'r2')])
  })

  it('allow with maxParallel 2 runs two at once and starts the third when one finishes', async () => {
    const runs = ['r1', 'r2', 'r3'].map((n, i) => runOf(n, i, { policy: 'allow', maxParallel: 2 }))
    const { kube, changed, finished } = setup(runs)
    for (const run of runs) await deliver(changed, RESOURCE_ADD, kube.workflow('team', run.metadata.name!))

    expect(['r1', 'r2', 'r3'].map((n) => kube.workflow('team', n).status?.phase)).toEqual(['Running', 'Running', 'Pending'])

    await deliver(finished, RESOURCE_UPDATE, kube.finishJob(jobOf(kube, 'r2'), 'Failed', 'boom'))

    expect(['r1', 'r2', 'r3'].map((n) => kube.workflow('team', n).status?.phase)).toEqual(['Running', 'Failed', 'Running'])
  })

  it('lists no other runs for a plain Workflow, a run without a policy, or a run in progress', async () => {
    const plain = runOf('plain', 0, { policy: 'forbid' }, null)
    const free = runOf('free', 0, undefined)
    const { kube, changed, finished, lists } = setup([plain, free, runOf('r1', 0, { policy: 'forbid' }), workflowOf('two', [{ name: 'a' }, { name: 'b', dependsOn: ['a'] }], { concurrency: { policy: 'forbid' } })])
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'plain'))
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'free'))
    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'two'))
    expect(lists()).toBe(0)

    await deliver(changed, RESOURCE_ADD, kube.workflow('team', 'r1'))
    expect(lists()).toBe(1)
    // A step of a run in progress finishing (the run goes on) lists nothing.
    const twoRun = kube.workflow('team', 'two').status?.runId
    await deliver(finished, RESOURCE_UPDATE, kube.finishJob(`two-a-${twoRun}`, 'Succeeded', 'OUTPUT:{}'))
    expect(lists()).toBe(1)
  })
})
