/**
 * The colour class of every phase Kinetic's kinds report, for the pages and the browser script
 * alike (no imports, so the browser bundle takes it as it is). Pure.
 */

/** The phase classes console.css defines. */
export type PhaseClass = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Skipped' | 'Waiting' | 'Cancelled' | 'Unknown'

const PHASE_CLASS: Record<string, PhaseClass> = {
  Pending: 'Pending', Candidate: 'Pending', Initializing: 'Pending', Excluded: 'Skipped',
  Running: 'Running', RollingBack: 'Running', Deploying: 'Running', Testing: 'Running', Progressing: 'Running', Removing: 'Running',
  Succeeded: 'Succeeded', Ready: 'Succeeded', Active: 'Succeeded', Approved: 'Succeeded', RolledBack: 'Skipped',
  Failed: 'Failed', Error: 'Failed', CompletedWithErrors: 'Failed', RollbackFailed: 'Failed', Rejected: 'Failed', NotReady: 'Failed',
  Degraded: 'Waiting', Waiting: 'Waiting', PendingApproval: 'Waiting',
  Skipped: 'Skipped', Deprecated: 'Skipped', Terminated: 'Cancelled', Cancelled: 'Cancelled',
}

/** Pure: the colour class of any phase Kinetic's kinds report (Unknown for one it does not know). */
export function phaseClass(phase: string | undefined): PhaseClass {
  return (phase && PHASE_CLASS[phase]) || 'Unknown'
}
