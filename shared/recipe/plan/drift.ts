/**
 * Drift of a recipe's children (spec §7.8). Pure: no I/O, no clock.
 *
 * Drift is a child of the current revision that is missing, carries a different
 * `purko.io/manifest-digest`, or has a field Kinetic sets with a different value. Only the
 * fields of the desired manifest are compared (the desired manifest holds exactly the fields
 * Kinetic sets), so everything else on the live object is never drift: annotations and labels of
 * others, finalizers, status, an autoscaler's `spec.replicas` (absent from the desired manifest
 * when the recipe leaves replicas open, spec §5.6), fields the API server defaults (`clusterIP`,
 * `terminationMessagePath`, `dnsPolicy`, ...). The comparison is tolerant of API-server
 * serialization:
 *
 * - a desired `false`, `""`, `[]` or `{}` equals an absent live field (omitempty: a volume
 *   mount's `readOnly: false` is not returned by the API server);
 * - lists of named entries (`containers`, `env`, `ports`, `volumeMounts`, `volumes`,
 *   `volumeClaimTemplates`, ...) are matched by name, so entries another field manager added
 *   are ignored, while a missing or changed entry of Kinetic's is drift;
 * - other lists (`command`, `args`, `capabilities.drop`, `accessModes`, `tolerations`) are
 *   compared whole;
 * - resource quantities (`resources`, claim `storage`) compare by value (`1000m` = `1`, as the
 *   API server canonicalizes them).
 *
 * Labels: Kinetic's labels are compared except `purko.io/revision` (which revision last wrote
 * the object is not content). Annotations: only Kinetic's own (`purko.io/manifest-digest`,
 * `purko.io/source-secret`). Paths are JSON paths from the object root, e.g.
 * `spec.template.spec.containers[0].image`, `metadata.labels["app.kubernetes.io/name"]`.
 */
import { LABEL_REVISION } from './labels.js'
import type { RecipeChild } from './objects.js'
import { compareQuantities } from '../../quantity.js'
import { isOwnedBy, isTerminating, liveObject, objectKey, type LiveObject, type LiveObjects } from './deploy-plan.js'

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === false || v === '' || v === 0
    || (Array.isArray(v) && v.length === 0) || (isRecord(v) && Object.keys(v).length === 0)
}

function member(path: string, key: string): string {
  const seg = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? key : `[${JSON.stringify(key)}]`
  if (path === '') return seg
  return seg.startsWith('[') ? `${path}${seg}` : `${path}.${seg}`
}

function nameOf(v: unknown): string | undefined {
  if (!isRecord(v)) return undefined
  if (typeof v.name === 'string') return v.name
  const meta = v.metadata
  if (isRecord(meta) && typeof meta.name === 'string') return meta.name
  return undefined
}

function isQuantityPath(path: string): boolean {
  return /resources\.(requests|limits)/.test(path)
}

function compare(desired: unknown, live: unknown, path: string, out: string[]): void {
  if (isRecord(desired)) {
    if (!isRecord(live)) {
      if (live === undefined && isEmpty(desired)) return
      if (live === undefined && Object.values(desired).every(isEmpty)) return
      out.push(path)
      return
    }
    for (const key of Object.keys(desired).sort()) compare(desired[key], live[key], member(path, key), out)
    return
  }
  if (Array.isArray(desired)) {
    if (!Array.isArray(live)) {
      if (live === undefined && desired.length === 0) return
      out.push(path)
      return
    }
    const names = desired.map(nameOf)
    if (desired.length > 0 && names.every((n) => n !== undefined)) {
      desired.forEach((d, i) => {
        const found = live.find((l) => nameOf(l) === names[i])
        const at = `${path}[${i}]`
        if (found === undefined) out.push(at)
        else compare(d, found, at, out)
      })
      // Kinetic's entries must keep their relative order (env values may refer to earlier ones).
      const liveOrder = live.map(nameOf).filter((n) => n !== undefined && names.includes(n))
      if (liveOrder.length === names.length && liveOrder.some((n, i) => n !== names[i]) && !out.some((p) => p.startsWith(path))) out.push(path)
      return
    }
    if (desired.length !== live.length) { out.push(path); return }
    const sub: string[] = []
    desired.forEach((d, i) => compare(d, live[i], `${path}[${i}]`, sub))
    if (sub.length > 0) out.push(path)
    return
  }
  if (desired === undefined) return
  if (live === undefined && isEmpty(desired)) return
  if (typeof desired === 'string' && typeof live === 'string' && desired !== live && isQuantityPath(path)) {
    if (compareQuantities(desired, live) === 0) return
  }
  if (desired !== live) out.push(path)
}

/**
 * The JSON paths where `live` differs from the desired manifest in a field Kinetic sets (empty:
 * no drift). A different `purko.io/manifest-digest` is reported as
 * `metadata.annotations["purko.io/manifest-digest"]`.
 */
export function driftPaths(desired: Record<string, unknown>, live: LiveObject): string[] {
  const out: string[] = []
  const dMeta = isRecord(desired.metadata) ? desired.metadata : {}
  const lMeta = live.metadata ?? {}
  const labels = { ...(isRecord(dMeta.labels) ? dMeta.labels : {}) }
  delete labels[LABEL_REVISION]
  compare(labels, lMeta.labels ?? {}, 'metadata.labels', out)
  compare(isRecord(dMeta.annotations) ? dMeta.annotations : {}, lMeta.annotations ?? {}, 'metadata.annotations', out)
  for (const key of Object.keys(desired).sort()) {
    if (key === 'metadata' || key === 'apiVersion' || key === 'kind' || key === 'status') continue
    compare(desired[key], live[key], key, out)
  }
  return out
}

export interface DriftItem {
  kind: string
  namespace: string
  name: string
  key: string
  workload?: string
  /** `missing`: re-create; `changed`: restore the `paths`. */
  type: 'missing' | 'changed'
  paths: string[]
  /** The child to re-apply (server-side apply, field manager `kinetic`, forced). */
  child: RecipeChild
  /** Event message: `re-created <Kind> <ns>/<name>` or `restored <Kind> <ns>/<name>: <paths>`. */
  message: string
}

export interface DriftPlan {
  /** Every drifted child of the current revision, in apply order. */
  drift: DriftItem[]
  /** Re-apply these now (`driftPolicy: Correct`, not `Deprecated`, not deleting). */
  correct: DriftItem[]
  /** One Event per item: `DriftCorrected` when corrected, else `DriftDetected`. */
  events: { reason: 'DriftCorrected' | 'DriftDetected'; message: string }[]
  /** Condition `Drifted`, set only once drift was detected: True `DriftDetected` when not corrected, else False `InSync`. */
  condition?: { type: 'Drifted'; status: 'True' | 'False'; reason: 'DriftDetected' | 'InSync'; message: string }
  /** A child is missing (T19 reason `ChildMissing`). */
  childMissing: boolean
}

export interface DriftInput {
  uid: string
  /** Children of the current revision (workload children: copied Secrets, Services, workload objects, MCPServers). */
  children: RecipeChild[]
  live: LiveObjects
  driftPolicy: 'Correct' | 'Warn'
  phase: string
  deleting: boolean
  /** Job workloads that completed (a completed Job removed by its TTL is not missing). */
  completedJobs?: readonly string[]
  /** The `afterReady` MCPServer is only expected once it was written (the workload was Ready). */
  mcpServerWritten?: (child: RecipeChild) => boolean
  /** Whether `Drifted` was set before (so a corrected or vanished drift reports `InSync`). */
  previouslyDrifted?: boolean
}

/**
 * spec §7.8 drift plan of the current revision. A child that exists without this recipe's UID is
 * not drift (never adopted; the prerequisites report `NameConflict`); a terminating child is
 * left to finish. Corrections happen with `driftPolicy: Correct` in every state except
 * `Deprecated` and deletion.
 */
export function planDrift(input: DriftInput): DriftPlan {
  const completed = new Set(input.completedJobs ?? [])
  const drift: DriftItem[] = []
  for (const c of input.children) {
    const key = objectKey(c.kind, c.namespace, c.name)
    const live = liveObject(input.live, key)
    const base = { kind: c.kind, namespace: c.namespace, name: c.name, key, child: c, ...(c.workload !== undefined ? { workload: c.workload } : {}) }
    if (!live) {
      if (c.kind === 'Job' && completed.has(c.name)) continue
      if (c.afterReady && input.mcpServerWritten && !input.mcpServerWritten(c)) continue
      drift.push({ ...base, type: 'missing', paths: [], message: `re-created ${key}` })
      continue
    }
    if (!isOwnedBy(live, input.uid) || isTerminating(live)) continue
    const paths = driftPaths(c.manifest, live)
    if (paths.length > 0) drift.push({ ...base, type: 'changed', paths, message: `restored ${key}: ${paths.join(', ')}` })
  }
  const correcting = input.driftPolicy === 'Correct' && input.phase !== 'Deprecated' && !input.deleting
  const correct = correcting ? drift : []
  const events = drift.map((d) => correcting
    ? { reason: 'DriftCorrected' as const, message: d.message }
    : { reason: 'DriftDetected' as const, message: d.type === 'missing' ? `${d.key} is missing` : `${d.key} differs: ${d.paths.join(', ')}` })
  const plan: DriftPlan = { drift, correct, events, childMissing: drift.some((d) => d.type === 'missing') }
  if (drift.length > 0 && !correcting) {
    plan.condition = { type: 'Drifted', status: 'True', reason: 'DriftDetected', message: drift.map((d) => d.type === 'missing' ? `${d.key} is missing` : `${d.key}: ${d.paths.join(', ')}`).join('; ') }
  } else if (drift.length > 0 || input.previouslyDrifted) {
    plan.condition = { type: 'Drifted', status: 'False', reason: 'InSync', message: drift.length > 0 ? 'drift corrected' : 'children match the current revision' }
  }
  return plan
}
