import { describe, expect, it } from 'vitest'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { POD_START_GRACE_MS, reconcileWorkflow } from '../../shared/workflow/controller.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, RESOURCE_ADD } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

const T0 = new Date('2026-01-01T00:00:00Z')
const WAITING = { reason: 'ImagePullBackOff', message: 'Back-off pulling image "agent:9"' }

/** A run whose one step Job exists, its pod kept waiting by the kubelet; the resync tick's view of it at `seconds` after the Job started. */
async function stuckRun(readyPods = 0) {
  const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'work' }])], agents: [agentOf('helper')] })
  const clock = { now: T0 }
  await deliver(workflowChanged(testDeps(kube, clock)), RESOURCE_ADD, kube.workflow('team', 'wf'))
  const [jobName] = kube.createdJobs
  kube.setStatus('Job', 'team', jobName!, { active: 1, ready: readyPods, startTime: T0 })
  kube.pods.set(`team/${jobName}-x`, {
    metadata: { name: `${jobName}-x`, namespace: 'team', labels: { 'job-name': jobName! } },
    status: { phase: 'Pending', containerStatuses: [{ name: 'step', image: 'agent:9', imageID: '', ready: false, restartCount: 0, state: { waiting: WAITING } }] },
  })
  let podLists = 0
  const listPods = kube.listPods.bind(kube)
  kube.listPods = async (namespace, labels) => {
    podLists++
    return listPods(namespace, labels)
  }
  const resyncAt = async (seconds: number) => {
    clock.now = new Date(T0.getTime() + seconds * 1000)
    return reconcileWorkflow(testDeps(kube, clock), 'team', 'wf', { kind: 'full' })
  }
  return { kube, jobName: jobName!, resyncAt, podLists: () => podLists }
}

describe('a step whose pod does not start', () => {
  it('is left alone within the grace a pod has to start: no pod is read', async () => {
    const { kube, resyncAt, podLists } = await stuckRun()
    await resyncAt(POD_START_GRACE_MS / 1000 - 5)
    expect(podLists()).toBe(0)
    expect(kube.workflow('team', 'wf').status?.stepStatuses?.[0]?.message).toBeUndefined()
  })

  it('says why on the step and as a Warning Event once the grace is over, at one pod list per stuck Job', async () => {
    const { kube, jobName, resyncAt, podLists } = await stuckRun()
    await resyncAt(POD_START_GRACE_MS / 1000 + 30)
    expect(podLists()).toBe(1)
    const why = `pod ${jobName}-x container step: ImagePullBackOff: Back-off pulling image "agent:9"`
    expect(kube.workflow('team', 'wf').status?.stepStatuses?.[0]).toMatchObject({ phase: 'Running', message: `Pod not started: ${why}` })
    expect(kube.events.filter((e) => e.reason === 'PodNotStarting').map((e) => [e.type, e.message])).toEqual([['Warning', `Step work: ${why}`]])
    // The next tick sees the same: no second Event.
    await resyncAt(POD_START_GRACE_MS / 1000 + 330)
    expect(kube.events.filter((e) => e.reason === 'PodNotStarting')).toHaveLength(1)
  })

  it('reads no pod of a Job whose pod is ready', async () => {
    const { resyncAt, podLists } = await stuckRun(1)
    await resyncAt(POD_START_GRACE_MS / 1000 + 30)
    expect(podLists()).toBe(0)
  })
})
