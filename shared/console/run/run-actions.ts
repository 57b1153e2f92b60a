/**
 * Which run actions the page and its live stream offer: those the run's state allows (the same
 * reading run-control refuses by) and the person's rights allow (asked once per page or stream:
 * the rights name the Workflow, not the step).
 */
import type { Action } from '../../run-control/request.js'
import { cancelRefusal, decisionRefusal, rerunRefusal } from '../../run-control/run-checks.js'
import type { Workflow } from '../../schemas/workflow.js'
import type { ConsoleRequest } from '../context.js'
import { allowedActions } from '../auth/permissions.js'
import type { RunView } from './run-view.js'

/** What the person may do to this Workflow, whatever its state. */
export interface RunRights {
  decide: boolean
  cancel: boolean
  rerun: boolean
}

/** The actions that apply now: steps that may be approved or denied, cancel, rerun. */
export interface RunActions {
  decide: string[]
  cancel: boolean
  rerun: boolean
}

/** The person's rights on the Workflow (all false when the console is read only). */
export async function runRights(req: ConsoleRequest, wf: Workflow): Promise<RunRights> {
  const namespace = wf.metadata.namespace ?? ''
  const workflow = wf.metadata.name ?? ''
  const anyStep = wf.spec.steps[0]?.name ?? ''
  const asked: Action[] = [
    { kind: 'approve', namespace, workflow, step: anyStep },
    { kind: 'cancel', namespace, workflow },
    { kind: 'rerun', namespace, workflow, parameters: {} },
  ]
  const [decide = false, cancel = false, rerun = false] = await allowedActions(req, asked)
  return { decide, cancel, rerun }
}

/**
 * Pure: the actions to offer: approve/deny only on a step that waits for approval (run-control
 * would also take a decision ahead of time, but the console offers it where it is asked for).
 */
export function runActions(wf: Workflow, view: RunView, rights: RunRights): RunActions {
  return {
    decide: rights.decide ? view.steps.filter((s) => s.awaitingApproval && !decisionRefusal(wf, s.name)).map((s) => s.name) : [],
    cancel: rights.cancel && !cancelRefusal(wf),
    rerun: rights.rerun && !rerunRefusal(wf),
  }
}

/** Pure: the console path of a run action (`/actions/approve/<ns>/<wf>/<step>`, ...). */
export function actionPath(kind: 'approve' | 'deny' | 'cancel' | 'rerun' | 'run', namespace: string, name: string, step?: string): string {
  const parts = [kind, namespace, name, ...(step === undefined ? [] : [step])].map(encodeURIComponent)
  return `/actions/${parts.join('/')}`
}
