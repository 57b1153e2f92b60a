import { ownerNamespace, type RegistryEntry } from './registry.js'

/**
 * Which MCPServers a step may use. The registry holds the servers of every namespace; a step
 * sees only those of its own namespace, of the agent namespace, and of the namespaces an
 * administrator shares with every step (`KINETIC_MCP_SHARED_NAMESPACES`). When two servers it
 * sees have the same name, the one of the step's own namespace wins, then the agent namespace's,
 * then the shared namespaces' in the order listed, so a server of a less trusted place never
 * replaces one of a more trusted place. A bearer token is only ever read from a Secret of the
 * step's own namespace, for a server whose MCPServer in that same namespace names that Secret.
 * Pure: no I/O.
 */

/** What decides visibility: the agent namespace and the shared namespace patterns. */
export interface McpVisibility {
  agentNamespace: string
  /**
   * Namespaces whose servers every step sees, in precedence order: a name, a pattern in which
   * `{namespace}` stands for the step's namespace (`mcp-{namespace}`), or `*` for every namespace.
   */
  shared: readonly string[]
}

/** The environment variable that lists the shared namespaces (comma-separated). */
export const SHARED_NAMESPACES_VARIABLE = 'KINETIC_MCP_SHARED_NAMESPACES'

const PLACEHOLDER = '{namespace}'
const PATTERN = /^(?:[a-z0-9-]|\{namespace\})+$/

/** Pure: the shared namespace patterns of `KINETIC_MCP_SHARED_NAMESPACES`; throws on a value that is no namespace pattern. */
export function parseSharedNamespaces(raw: string | undefined): string[] {
  const items = (raw ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')
  for (const item of items) {
    if (item !== '*' && (!PATTERN.test(item) || item.length > 63 + PLACEHOLDER.length * 4)) {
      throw new Error(`${SHARED_NAMESPACES_VARIABLE}: ${JSON.stringify(item)} is not a namespace name, a pattern with {namespace}, or *`)
    }
  }
  return [...new Set(items)]
}

/**
 * Pure: how much a step in `stepNamespace` trusts the servers of `namespace`: 0 its own, 1 the
 * agent namespace, 2 + i the i-th shared pattern that matches; null when the step does not see them.
 */
export function precedence(namespace: string, stepNamespace: string, vis: McpVisibility): number | null {
  if (namespace === stepNamespace) return 0
  if (namespace === vis.agentNamespace) return 1
  const at = vis.shared.findIndex((p) => p === '*' || p.split(PLACEHOLDER).join(stepNamespace) === namespace)
  return at < 0 ? null : 2 + at
}

/** One server a step uses, with the namespace it belongs to. */
export interface VisibleServer {
  entry: RegistryEntry
  namespace: string
}

/** What a step in one namespace makes of the registry. */
export interface StepMcpView {
  /** The servers the step uses, one per name, the least trusted first (a later server's tool replaces an earlier one's). */
  servers: VisibleServer[]
  /** Names the step sees in more than one namespace: the namespace whose server it uses, and the others. */
  shadowed: { name: string; used: string; hidden: string[] }[]
  /** Servers registered in namespaces the step does not see. */
  unseen: VisibleServer[]
}

/** Pure: the servers a step in `stepNamespace` uses, from the registry entries in registry order. */
export function stepMcpView(entries: readonly RegistryEntry[], stepNamespace: string, vis: McpVisibility): StepMcpView {
  const best = new Map<string, { server: VisibleServer; rank: number; order: number }>()
  const seen = new Map<string, Set<string>>()
  const unseen: VisibleServer[] = []
  entries.forEach((entry, order) => {
    const namespace = ownerNamespace(entry, vis.agentNamespace)
    const rank = precedence(namespace, stepNamespace, vis)
    if (rank === null) {
      unseen.push({ entry, namespace })
      return
    }
    const namespaces = seen.get(entry.name) ?? new Set<string>()
    namespaces.add(namespace)
    seen.set(entry.name, namespaces)
    const held = best.get(entry.name)
    // Within one namespace the first entry of a name wins (a hand-edited duplicate is listed once).
    if (!held || rank < held.rank) best.set(entry.name, { server: { entry, namespace }, rank, order })
  })
  const servers = [...best.values()]
    .sort((a, b) => b.rank - a.rank || a.order - b.order)
    .map((b) => b.server)
  const shadowed = [...seen].filter(([, namespaces]) => namespaces.size > 1).map(([name, namespaces]) => {
    const used = best.get(name)!.server.namespace
    return { name, used, hidden: [...namespaces].filter((n) => n !== used) }
  })
  return { servers, shadowed, unseen }
}

/**
 * Pure: whether some step sees servers of both namespaces (so two servers of the same name there
 * compete for its tools): a step in either of them, or in a namespace a shared pattern maps to one.
 */
export function seenTogether(a: string, b: string, vis: McpVisibility): boolean {
  if (a === b) return true
  const candidates = new Set([a, b])
  for (const pattern of vis.shared) {
    if (pattern === '*') return true
    for (const target of [a, b]) {
      const step = stepNamespaceFor(pattern, target)
      if (step !== null) candidates.add(step)
    }
  }
  return [...candidates].some((s) => precedence(a, s, vis) !== null && precedence(b, s, vis) !== null)
}

/** Pure: the step namespace for which `pattern` names `target`, or null (a fixed name matches every step: null too). */
function stepNamespaceFor(pattern: string, target: string): string | null {
  if (!pattern.includes(PLACEHOLDER)) return null
  const [head, ...rest] = pattern.split(PLACEHOLDER)
  const tail = rest.at(-1) ?? ''
  if (!target.startsWith(head!) || !target.endsWith(tail) || target.length < head!.length + tail.length) return null
  // Every placeholder stands for the same namespace: try the first one's possible lengths.
  for (let length = 1; length <= target.length - head!.length - tail.length; length++) {
    const step = target.slice(head!.length, head!.length + length)
    if (pattern.split(PLACEHOLDER).join(step) === target) return step
  }
  return null
}
