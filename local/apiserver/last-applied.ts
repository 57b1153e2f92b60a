/**
 * How the real field manager carries objects from client-side `kubectl apply` to
 * `kubectl apply --server-side` (manager `kubectl` only; another manager opts out): an apply
 * may take over, without a conflict, the fields the last-applied-configuration annotation
 * names and the live object still holds unchanged; and after the apply the annotation, when
 * the object keeps one, is rewritten to the applied configuration, so a later client-side
 * apply starts from it. Pure.
 */
import { appliedFields, compareFields, type FieldSet } from './field-sets.js'
import type { Shape } from './field-shapes.js'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The annotation client-side apply keeps its last configuration in. */
export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'
/** The field manager whose applies upgrade client-side apply ownership. */
export const KUBECTL_APPLY_MANAGER = 'kubectl'
/** The real server's limit on all annotations of an object together (keys and values). */
const ANNOTATIONS_LIMIT_BYTES = 256 * 1024

const lastApplied = (obj: Obj | undefined): string | undefined => {
  const annotations = isObj(obj?.metadata) ? (obj.metadata as Obj).annotations : undefined
  const value = isObj(annotations) ? annotations[LAST_APPLIED] : undefined
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** The fields of the live object's last-applied configuration that it still holds with the same values. */
export function takeoverFields(live: Obj | undefined, shape: Shape): FieldSet {
  const text = lastApplied(live)
  if (!live || !text) return new Set()
  let config: unknown
  try {
    config = JSON.parse(text)
  } catch {
    return new Set()
  }
  if (!isObj(config) || config.apiVersion !== live.apiVersion) return new Set()
  const { changed, removed } = compareFields(config, live, shape)
  return new Set([...appliedFields(config, shape)].filter((k) => !changed.has(k) && !removed.has(k)))
}

/** JSON with object keys sorted, as Go encodes a map. */
function sortedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`
  if (isObj(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${sortedJson(v[k])}`).join(',')}}`
  return JSON.stringify(v)
}

/** The applied object with its annotation set to the applied configuration, when it keeps an annotation at all. */
export function syncLastApplied(merged: Obj, applied: Obj): Obj {
  if (!lastApplied(merged)) return merged
  const config = structuredClone(applied)
  const meta = isObj(config.metadata) ? config.metadata : undefined
  const own = meta && isObj(meta.annotations) ? (meta.annotations as Record<string, unknown>) : undefined
  if (own) delete own[LAST_APPLIED]
  const annotations: Record<string, string> = { ...((merged.metadata as Obj).annotations as Record<string, string>), [LAST_APPLIED]: `${sortedJson(config)}\n` }
  const size = Object.entries(annotations).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0)
  if (size > ANNOTATIONS_LIMIT_BYTES) delete annotations[LAST_APPLIED]
  return { ...merged, metadata: { ...(merged.metadata as Obj), annotations } }
}
