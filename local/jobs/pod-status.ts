/** The first container of a pod, as far as its status needs it. */
export interface ContainerRef {
  name: string
  image?: string
}

/** Where a pod runs, as its status reports it. */
export interface PodPlacement {
  /** The node's (and, without a pod network, the pod's) IP. */
  ip: string
}

/**
 * Pure: the four pod conditions a kubelet keeps. `ready` sets ContainersReady and Ready;
 * `reason` explains a False (ContainersNotReady, PodCompleted, PodFailed).
 */
export function podConditions(ready: boolean, reason: string, now: string): Array<Record<string, string>> {
  const readyCond = (type: string) => ({ type, status: ready ? 'True' : 'False', lastTransitionTime: now, ...(reason ? { reason } : {}) })
  return [
    { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
    { type: 'Initialized', status: 'True', lastTransitionTime: now },
    readyCond('ContainersReady'),
    readyCond('Ready'),
  ]
}

const containerBase = (c: ContainerRef) => ({ name: c.name, restartCount: 0, image: c.image ?? '', imageID: '' })

/** Pure: a pod whose container is being set up (the kubelet's `ContainerCreating`). */
export function creatingStatus(c: ContainerRef, at: PodPlacement, now: string): Record<string, unknown> {
  return {
    phase: 'Pending', hostIP: at.ip, hostIPs: [{ ip: at.ip }], startTime: now,
    conditions: podConditions(false, 'ContainersNotReady', now),
    containerStatuses: [{ ...containerBase(c), ready: false, started: false, state: { waiting: { reason: 'ContainerCreating' } } }],
  }
}

/**
 * Pure: a pod whose container cannot start because its environment names something missing.
 * A kubelet keeps such a pod Pending (`fail: false`) and retries; the local runner fails it so
 * the Job ends with a clear reason (`fail: true`).
 */
export function configErrorStatus(c: ContainerRef, error: { reason: string; message: string }, fail: boolean, now: string): Record<string, unknown> {
  return {
    phase: fail ? 'Failed' : 'Pending',
    ...(fail ? { reason: error.reason, message: error.message } : {}),
    conditions: podConditions(false, 'ContainersNotReady', now),
    containerStatuses: [{ ...containerBase(c), ready: false, started: false, state: { waiting: { reason: error.reason, message: error.message } } }],
  }
}

/** Pure: a pod whose container runs. */
export function runningStatus(c: ContainerRef, at: PodPlacement, startedAt: string): Record<string, unknown> {
  return {
    phase: 'Running', startTime: startedAt, podIP: at.ip, podIPs: [{ ip: at.ip }], hostIP: at.ip, hostIPs: [{ ip: at.ip }],
    conditions: podConditions(true, '', startedAt),
    containerStatuses: [{ ...containerBase(c), ready: true, started: true, state: { running: { startedAt } } }],
  }
}

/**
 * Pure: a pod whose only container exited; exit code 0 is Succeeded, anything else Failed. A
 * non-empty termination message is reported as the kubelet does, in the terminated state.
 */
export function terminatedStatus(c: ContainerRef, exitCode: number, startedAt: string, now: string, message = ''): Record<string, unknown> {
  const phase = exitCode === 0 ? 'Succeeded' : 'Failed'
  return {
    phase,
    conditions: podConditions(false, phase === 'Succeeded' ? 'PodCompleted' : 'PodFailed', now),
    containerStatuses: [{
      ...containerBase(c), ready: false, started: false,
      state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt, finishedAt: now, ...(message ? { message } : {}) } },
    }],
  }
}

/** Pure: the exit code a container reports: its own, or 128 + the signal that ended it. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code
  return signal === 'SIGKILL' ? 137 : 143
}
