import { parse } from 'yaml'

/**
 * The `mcp-servers` registry (purko's): ConfigMap `mcp-servers` in the agent namespace,
 * key `servers`, a list of `{name, url, auth, icon, category, secretRef}`. Several writers share
 * it (the MCPServer controller, Helm's rendered `mcpServers` list, a dashboard, a person with
 * kubectl), so this module keeps every entry it did not write and every key it does not know,
 * reads YAML as well as JSON, and never turns content it cannot read into an empty list.
 *
 * Every entry belongs to one owner, (namespace, name): Kinetic writes the MCPServer's namespace
 * into the entry as `namespace`; an entry without one (Helm's, a person's, purko's) belongs to the
 * agent namespace, where only administrators write. Writers replace and remove only entries of
 * their own owner, so MCPServers of the same name in two namespaces are two entries, never one
 * taking the other's place. Pure: no I/O, no clock.
 */

/** Name of the registry ConfigMap (in the agent namespace). */
export const REGISTRY_CONFIGMAP = 'mcp-servers'
/** Key of the registry ConfigMap that holds the server list. */
export const REGISTRY_KEY = 'servers'

/** One server of the registry; keys this module does not know are kept as they were. */
export interface RegistryEntry {
  name: string
  url: string
  /** `none` or `bearer`; an entry written without it reads as `none` (purko reads it so too). */
  auth: string
  icon?: string
  category?: string
  secretRef?: string
  /** Namespace of the MCPServer that wrote the entry; absent: the agent namespace's (see {@link ownerNamespace}). */
  namespace?: string
  [key: string]: unknown
}

/** Who an entry belongs to. */
export interface RegistryOwner {
  namespace: string
  name: string
}

/** The registry as read: `error` set means the content could not be read and must not be overwritten. */
export interface ParsedRegistry {
  entries: RegistryEntry[]
  error?: string
}

const OPTIONAL_STRINGS = ['icon', 'category', 'secretRef', 'namespace'] as const

/**
 * Pure: reads the `servers` value (YAML, so JSON too). Absent or blank content is an empty
 * registry; anything that is not a list of objects with a string `name` and `url` is an `error`
 * (with no entries), never an exception.
 */
export function parseRegistry(text: string | undefined): ParsedRegistry {
  if (text === undefined || text.trim() === '') return { entries: [] }
  let doc: unknown
  try {
    // What this module writes is JSON, which JSON.parse reads many times faster than a YAML parser.
    doc = JSON.parse(text)
  } catch {
    try {
      doc = parse(text, { prettyErrors: false, logLevel: 'error' })
    } catch (err) {
      return { entries: [], error: `not YAML or JSON: ${firstLine(err)}` }
    }
  }
  if (doc === null || doc === undefined) return { entries: [] }
  if (!Array.isArray(doc)) return { entries: [], error: `expected a list of servers, found ${kindOf(doc)}` }
  const entries: RegistryEntry[] = []
  for (const [i, item] of doc.entries()) {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      return { entries: [], error: `item ${i + 1} is ${kindOf(item)}, not a server` }
    }
    const raw = item as Record<string, unknown>
    if (typeof raw['name'] !== 'string' || raw['name'] === '') {
      return { entries: [], error: `item ${i + 1} has no name` }
    }
    if (typeof raw['url'] !== 'string') return { entries: [], error: `server ${raw['name']} has no url` }
    if (raw['auth'] !== undefined && typeof raw['auth'] !== 'string') {
      return { entries: [], error: `server ${raw['name']}: auth is not a string` }
    }
    for (const key of OPTIONAL_STRINGS) {
      if (raw[key] !== undefined && raw[key] !== null && typeof raw[key] !== 'string') {
        return { entries: [], error: `server ${raw['name']}: ${key} is not a string` }
      }
    }
    entries.push({ ...raw, auth: (raw['auth'] as string | undefined) ?? 'none' } as RegistryEntry)
  }
  return { entries }
}

/** Pure: the namespace an entry belongs to: its `namespace`, else the agent namespace. */
export function ownerNamespace(entry: RegistryEntry, agentNamespace: string): string {
  return typeof entry.namespace === 'string' && entry.namespace !== '' ? entry.namespace : agentNamespace
}

/** Pure: whether `entry` belongs to `owner`. */
export function ownedBy(entry: RegistryEntry, owner: RegistryOwner, agentNamespace: string): boolean {
  return entry.name === owner.name && ownerNamespace(entry, agentNamespace) === owner.namespace
}

/**
 * Pure: the registry with `entry` (whose `namespace` names its owner) in place of the first entry
 * its owner holds, or that `claims` says is its own (its position kept; later entries of the
 * owner dropped so readers see one), or appended. Entries of every other owner stay as they were.
 */
export function upsertEntry(
  entries: readonly RegistryEntry[], entry: RegistryEntry, agentNamespace: string,
  claims: (e: RegistryEntry) => boolean = () => false,
): RegistryEntry[] {
  const owner = { namespace: ownerNamespace(entry, agentNamespace), name: entry.name }
  const mine = (e: RegistryEntry) => ownedBy(e, owner, agentNamespace) || claims(e)
  const at = entries.findIndex(mine)
  if (at < 0) return [...entries, entry]
  return entries.flatMap((e, i) => (i === at ? [entry] : mine(e) ? [] : [e]))
}

/** Pure: the registry without the entries of `owner` (and those `claims` says are its own). */
export function removeEntry(
  entries: readonly RegistryEntry[], owner: RegistryOwner, agentNamespace: string,
  claims: (e: RegistryEntry) => boolean = () => false,
): RegistryEntry[] {
  return entries.filter((e) => !ownedBy(e, owner, agentNamespace) && !claims(e))
}

/** Pure: the `servers` value as purko writes it (2-space-indented JSON). */
export function renderRegistry(entries: readonly RegistryEntry[]): string {
  return JSON.stringify(entries, null, 2)
}

/** Pure: whether two entries say the same thing (key order ignored). */
export function sameEntry(a: RegistryEntry | undefined, b: RegistryEntry | undefined): boolean {
  if (!a || !b) return a === b
  return canonical(a) === canonical(b)
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>
    return `{${Object.keys(obj).filter((k) => obj[k] !== undefined).sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(obj[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}

function kindOf(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'a list'
  if (typeof v === 'object') return 'a map'
  return `a ${typeof v}`
}

function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return (message.split('\n')[0] ?? '').slice(0, 200)
}
