// Stopping a node deletes each container's task through ctr; a task containerd already reaped
// answers "not found" and must not be retried (50 tries of ~8 s per container made stopping a
// node with Knative's ~40 containers take minutes).
import { expect, it } from 'vitest'
import { taskDeleteOutcome } from '../../cluster/node/containerd.js'

it('takes a task ctr cannot find as gone, retries one still stopping, and is done when ctr deletes it', () => {
  // ctr 1.6.20's words for a task already reaped (seen stopping the Knative tier's node).
  const reaped = 'ctr: no running task found: task 072be2274af9 not found: not found\n'
  expect(taskDeleteOutcome({ status: 1, stderr: reaped })).toBe('gone')
  expect(taskDeleteOutcome({ status: 1, stderr: 'ctr: cannot delete a non stopped container: {running 1234 0001-01-01 00:00:00 +0000 UTC}\n' })).toBe('retry')
  expect(taskDeleteOutcome({ status: 0, stderr: '' })).toBe('deleted')
})
