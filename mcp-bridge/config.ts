/** The bridge's settings, all from environment variables (the pod spec sets them). */
export interface BridgeConfig {
  port: number
  namespace: string
  pod: string
  container: string
  /** Bearer token clients must send; from MCP_BRIDGE_AUTH_TOKEN, else AUTH_TOKEN. */
  authToken?: string
  maxLineBytes: number
  requestTimeoutMs: number
  attachTimeoutMs: number
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number, errors: string[], max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1 || value > max) {
    errors.push(`${name} must be an integer from 1 to ${max}`)
    return fallback
  }
  return value
}

/** Pure: reads the settings from `env`; every problem is listed (values of secrets never are). */
export function parseBridgeConfig(env: NodeJS.ProcessEnv): { config: BridgeConfig } | { errors: string[] } {
  const errors: string[] = []
  if (!env.MCP_BRIDGE_PORT) errors.push('MCP_BRIDGE_PORT is required (the port of the MCPServer)')
  const port = positiveInt(env, 'MCP_BRIDGE_PORT', 0, errors, 65535)
  const required = (name: string, what: string) => {
    const value = env[name]?.trim()
    if (!value) errors.push(`${name} is required (${what})`)
    return value ?? ''
  }
  const pod = required('POD_NAME', 'downward API metadata.name')
  const namespace = required('POD_NAMESPACE', 'downward API metadata.namespace')
  const container = env.MCP_BRIDGE_CONTAINER?.trim() || 'mcp-server'
  const authToken = env.MCP_BRIDGE_AUTH_TOKEN || env.AUTH_TOKEN || undefined
  const maxLineBytes = positiveInt(env, 'MCP_BRIDGE_MAX_LINE_BYTES', 8 * 1024 * 1024, errors)
  const requestTimeoutMs = positiveInt(env, 'MCP_BRIDGE_REQUEST_TIMEOUT_MS', 300_000, errors)
  const attachTimeoutMs = positiveInt(env, 'MCP_BRIDGE_ATTACH_TIMEOUT_MS', 120_000, errors)
  if (errors.length > 0) return { errors }
  return { config: { port, namespace, pod, container, ...(authToken ? { authToken } : {}), maxLineBytes, requestTimeoutMs, attachTimeoutMs } }
}
