import { describe, expect, it } from 'vitest'
import { podWaitingDetail, type PodLike } from '../../shared/kube/pod-waiting.js'

const waiting = (reason: string, message?: string) => ({ state: { waiting: { reason, ...(message ? { message } : {}) } } })
const pod = (name: string, containers: PodLike['status']): PodLike => ({ metadata: { name }, status: containers })

describe('why a pod has not started', () => {
  it('names the first pod and container the kubelet keeps waiting, with its reason and message', () => {
    const pods = [
      pod('b', { containerStatuses: [{ name: 'main', ...waiting('ErrImagePull', 'not found') }] }),
      pod('a', { containerStatuses: [{ name: 'main', ...waiting('CreateContainerConfigError', 'secret "db" not found') }] }),
    ]
    expect(podWaitingDetail(pods)).toBe('pod a container main: CreateContainerConfigError: secret "db" not found')
  })

  it('looks at init containers first, and leaves out a message the kubelet did not give', () => {
    expect(podWaitingDetail([pod('p', { initContainerStatuses: [{ name: 'init', ...waiting('CrashLoopBackOff') }], containerStatuses: [{ name: 'main', ...waiting('PodInitializing') }] })]))
      .toBe('pod p container init: CrashLoopBackOff')
  })

  it('says nothing while containers are only being created or are running', () => {
    expect(podWaitingDetail([pod('p', { containerStatuses: [{ name: 'main', ...waiting('ContainerCreating') }] })])).toBeUndefined()
    expect(podWaitingDetail([pod('p', { containerStatuses: [{ name: 'main', state: {} }] }), { metadata: { name: 'q' } }])).toBeUndefined()
  })
})
