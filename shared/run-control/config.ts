/**
 * run-control's configuration, read from the environment values it is given. Pure: the
 * process entry point passes `process.env`.
 */

/** How callers are checked: `kubernetes` (TokenReview + SubjectAccessReview) or `none` (local only). */
export type CallerAuth = 'kubernetes' | 'none'

export interface RunControlConfig {
  auth: CallerAuth
  /** The audience a caller's token must have; unset asks for the API server's own audiences. */
  audience?: string
  /** Namespace of purko's name-only paths (`/api/approve/{workflow}/{step}`), purko's --agent-namespace. */
  agentNamespace: string
}

/** A configuration value run-control cannot start with. */
export class RunControlConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'RunControlConfigError'
  }
}

/** Pure: KINETIC_RUN_CONTROL_AUTH (default `kubernetes`), KINETIC_RUN_CONTROL_AUDIENCE, KINETIC_AGENT_NAMESPACE (default `ai-agents`). */
export function runControlConfig(env: Record<string, string | undefined>): RunControlConfig {
  const raw = env.KINETIC_RUN_CONTROL_AUTH?.trim()
  const auth = raw === undefined || raw === '' ? 'kubernetes' : raw
  if (auth !== 'kubernetes' && auth !== 'none') {
    throw new RunControlConfigError(`KINETIC_RUN_CONTROL_AUTH must be "kubernetes" or "none", got ${JSON.stringify(auth)}`)
  }
  const config: RunControlConfig = {
    auth,
    agentNamespace: env.KINETIC_AGENT_NAMESPACE?.trim() || env.PURKO_AGENT_NAMESPACE?.trim() || 'ai-agents',
  }
  const audience = env.KINETIC_RUN_CONTROL_AUDIENCE?.trim()
  if (audience) config.audience = audience
  return config
}
