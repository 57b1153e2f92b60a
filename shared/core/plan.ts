// The part of the controller contract that pure planners speak: what a plan tells the shell
// (its transitions) and the one value for "nothing to write". The shell that drives planners is
// shared/engine/controller.ts; planners import only this, never the shell.

/**
 * A change worth telling people about. Every transition is logged and, unless `publish` is false,
 * published as a `dev.kinetic.<kind>.<transition kind>` CloudEvent; those with `record` also become
 * a Kubernetes Event (kept for what a person may act on, so routine steps do not flood etcd).
 */
export interface Transition {
  kind: string
  type: 'Normal' | 'Warning'
  reason: string
  message: string
  record: boolean
  /** Part of the object the transition is about, e.g. `spec.steps{build}`. */
  fieldPath?: string
  /** Extra CloudEvent data (step, phase, level, criteria values, ...). */
  data?: Record<string, unknown>
  /** False: logged (and recorded), but no CloudEvent; for kinds whose event catalogue is fixed. */
  publish?: boolean
}

/** The part of every plan the shell reads; the rest belongs to the controller. */
export interface ControllerPlan {
  transitions: Transition[]
}

/** Returned by `gather` or `plan` when there is nothing to write. */
export const UNCHANGED = Symbol('unchanged')
