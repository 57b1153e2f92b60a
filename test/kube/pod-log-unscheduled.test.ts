// A step pod no node runs yet (unschedulable, or still waiting for the scheduler) has no log.
// kube-apiserver answers its log with 204 No Content (pinned on the real one in
// test/cluster/console-access.test.ts); the embedded API server does the same.
import { expect, it } from 'vitest'
import { EmbeddedKube } from '../support/embedded-kube.js'

const pendingPod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'wf-a-1-x', namespace: 'default', labels: { 'job-name': 'wf-a-1' } }, spec: { containers: [{ name: 'step', image: 'agent:1' }] } }

it('reads the log of a Job whose pod no node runs yet as empty, not as an error', async () => {
  const kube = new EmbeddedKube()
  kube.put(pendingPod)
  expect(await kube.readJobLog('default', 'wf-a-1')).toBe('')
  expect(await kube.readStepReport('default', 'wf-a-1', 'log')).toEqual({ text: '' })
  expect(await kube.readJobLog('default', 'wf-gone')).toBeNull()
})
