/**
 * Why a step failed, as it appears in the `reason` field of the OUTPUT line. The names are
 * stable: downstream conditions and the run history may match on them.
 */
export type FailureReason =
  | 'ConfigInvalid'
  | 'ModelError'
  | 'MaxToolCalls'
  | 'CostLimit'
  | 'MaxExecutionTime'
  | 'AgentError'
  | 'OutputTooLarge'
  | 'InternalError'

/** A step failure that carries its reason; every other thrown value is reported as InternalError. */
export class StepError extends Error {
  readonly reason: FailureReason
  constructor(reason: FailureReason, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StepError'
    this.reason = reason
  }
}

/** Invalid or missing environment: the only failure that exits with code 2. */
export class ConfigError extends StepError {
  readonly issues: readonly string[]
  constructor(issues: readonly string[]) {
    super('ConfigInvalid', `invalid executor configuration: ${issues.join('; ')}`)
    this.name = 'ConfigError'
    this.issues = issues
  }
}
