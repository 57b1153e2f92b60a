/**
 * Configuration of the recipe functions (spec §1.1) and the target namespaces it gives each
 * child (spec §5.1). Pure: the caller reads the environment and passes the values in; every recipe
 * function reads the same four variables, so they all place children alike.
 */

/** The environment variables of spec §1.1, as the caller read them (unset or empty = default). */
export interface RecipeEnv {
  KINETIC_RECIPES_MCP_NAMESPACE?: string | undefined
  KINETIC_RECIPES_SANDBOX_NAMESPACE?: string | undefined
  KINETIC_RECIPES_MCP_AUTH?: string | undefined
  KINETIC_RECIPES_MCP_AUDIENCE?: string | undefined
}

/** Resolved configuration. The namespaces may still contain `{namespace}` (see {@link targetNamespace}). */
export interface RecipeConfig {
  /** Namespace (pattern) of `transport` workloads and of every MCPServer. */
  mcpNamespace: string
  /** Namespace (pattern) of every other workload and of the test Jobs. */
  sandboxNamespace: string
  /** Authentication of the recipes MCP server. */
  mcpAuth: 'kubernetes' | 'none'
  /** Audience bearer tokens must carry, when set. */
  mcpAudience?: string
}

export const DEFAULT_MCP_NAMESPACE = 'mcp-server'
export const DEFAULT_SANDBOX_NAMESPACE = 'sandbox-recipes'
export const NAMESPACE_PLACEHOLDER = '{namespace}'

/** Error of a configuration value; the function refuses to start with it. */
export class RecipeConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'RecipeConfigError'
  }
}

// What a namespace pattern may look like: DNS-1123 label characters and `{namespace}`.
const PATTERN_CHARS = /^(?:[a-z0-9-]|\{namespace\})+$/

function namespacePattern(variable: string, raw: string | undefined, fallback: string): string {
  const value = raw === undefined || raw.trim() === '' ? fallback : raw.trim()
  if (!PATTERN_CHARS.test(value)) {
    throw new RecipeConfigError(`${variable} must be a namespace name, optionally containing {namespace}, got ${JSON.stringify(value)}`)
  }
  return value
}

/** Pure: spec §1.1 configuration from the environment values (defaults `mcp-server`, `sandbox-recipes`, `kubernetes`). */
export function recipeConfig(env: RecipeEnv): RecipeConfig {
  const auth = env.KINETIC_RECIPES_MCP_AUTH === undefined || env.KINETIC_RECIPES_MCP_AUTH.trim() === ''
    ? 'kubernetes'
    : env.KINETIC_RECIPES_MCP_AUTH.trim()
  if (auth !== 'kubernetes' && auth !== 'none') {
    throw new RecipeConfigError(`KINETIC_RECIPES_MCP_AUTH must be "kubernetes" or "none", got ${JSON.stringify(auth)}`)
  }
  const config: RecipeConfig = {
    mcpNamespace: namespacePattern('KINETIC_RECIPES_MCP_NAMESPACE', env.KINETIC_RECIPES_MCP_NAMESPACE, DEFAULT_MCP_NAMESPACE),
    sandboxNamespace: namespacePattern('KINETIC_RECIPES_SANDBOX_NAMESPACE', env.KINETIC_RECIPES_SANDBOX_NAMESPACE, DEFAULT_SANDBOX_NAMESPACE),
    mcpAuth: auth,
  }
  const audience = env.KINETIC_RECIPES_MCP_AUDIENCE?.trim()
  if (audience) config.mcpAudience = audience
  return config
}

/** Pure: a namespace pattern with every `{namespace}` replaced by the recipe's namespace. */
export function targetNamespace(pattern: string, recipeNamespace: string): string {
  return pattern.split(NAMESPACE_PLACEHOLDER).join(recipeNamespace)
}

/** Pure: the MCP namespace of a recipe (workloads with `transport`, MCPServers). */
export function mcpNamespaceOf(config: RecipeConfig, recipeNamespace: string): string {
  return targetNamespace(config.mcpNamespace, recipeNamespace)
}

/** Pure: the sandbox namespace of a recipe (other workloads, test Jobs). */
export function sandboxNamespaceOf(config: RecipeConfig, recipeNamespace: string): string {
  return targetNamespace(config.sandboxNamespace, recipeNamespace)
}

/** Pure: spec §5.1 namespace of a workload: the MCP namespace when it sets `transport`, else the sandbox. */
export function workloadNamespaceOf(config: RecipeConfig, recipeNamespace: string, workload: { transport?: string | undefined }): string {
  return workload.transport ? mcpNamespaceOf(config, recipeNamespace) : sandboxNamespaceOf(config, recipeNamespace)
}
