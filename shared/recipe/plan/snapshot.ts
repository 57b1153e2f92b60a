/**
 * The revision snapshot ConfigMap `<recipe>-rev-<N>` (spec §7.9), with the size check that
 * gives `RevisionTooLarge` (spec §8.2). Pure.
 *
 * Keys: `manifests.json` (every workload child in apply order as `{workload, order, digest,
 * object}`, `afterReady: true` on an http MCPServer; a copied Secret's `object` is
 * `{"kind":"SecretCopy","namespace","name","sources":[{"namespace","name","key","env","optional"}]}`,
 * never a value), `tests.json` (each test's copied Secret and Job, `{test, digest, object}`),
 * `workflow.json` (the child Workflow or `null`), `resolved.json` (`profile`, `inputs`,
 * `computed`, `included` in spec order, `excluded`, `order`), `generation`, `digest` and
 * `completed-jobs` (newline-separated names of this revision's completed Job workloads, empty
 * at first).
 *
 * `digest` is the SHA-256 (64 hex; `status.revisions[].digest` is its first 16) of the canonical
 * JSON of `manifests.json`, `tests.json`, `workflow.json` and `resolved.json` as a build for
 * revision 0 would write them: `generation` and `completed-jobs` change after the fact, and the
 * revision number (the `purko.io/revision` label, the `-r<N>` of test Job names) is not content,
 * so an unchanged render gives the same digest at every revision (T5 `NoEffectiveChange`).
 */
import type { WorkflowRecipe } from '../../schemas/workflowrecipe.js'
import type { RecipeConfig } from './config.js'
import { canonicalJson, sha256OfCanonical } from './digest.js'
import { childLabels } from './labels.js'
import type { ResolvedFacts } from './lifecycle-facts.js'
import { buildManifests, recipeRefOf } from './manifests.js'
import { revisionConfigMapName } from './names.js'
import { childMeta, type Manifest, type RecipeChild, type RecipeObjects } from './objects.js'
import type { RenderOk, SpecError } from './rendered.js'

/** Largest snapshot (900 KiB): a ConfigMap holds at most 1 MiB, and the rest is headroom. */
export const MAX_SNAPSHOT_BYTES = 900 * 1024

export const SNAPSHOT_KEYS = ['manifests.json', 'tests.json', 'workflow.json', 'resolved.json', 'generation', 'digest', 'completed-jobs'] as const

function entryObject(c: RecipeChild): unknown {
  if (!c.secretCopy) return c.manifest
  return {
    kind: 'SecretCopy',
    namespace: c.secretCopy.namespace,
    name: c.secretCopy.name,
    sources: c.secretCopy.sources.map((s) => ({ namespace: s.namespace, name: s.name, key: s.key, env: s.env, optional: s.optional })),
  }
}

/** What a valid generation resolved to (spec §9): its snapshot's `resolved.json`, and `status.resolved`. */
export function resolvedOf(recipe: WorkflowRecipe, rendered: RenderOk): ResolvedFacts {
  const included = new Set(rendered.order)
  return {
    profile: rendered.profile,
    inputs: rendered.inputs,
    computed: rendered.computed,
    included: (recipe.spec.workloads ?? []).map((w) => w.name).filter((n) => included.has(n)),
    excluded: [...rendered.excluded],
    order: [...rendered.order],
  }
}

function content(recipe: WorkflowRecipe, rendered: RenderOk, objects: RecipeObjects): Record<'manifests.json' | 'tests.json' | 'workflow.json' | 'resolved.json', unknown> {
  const manifests = objects.workloads.flatMap((w) => w.children.map((c) => ({
    workload: w.name,
    order: w.order,
    digest: c.digest,
    ...(c.afterReady ? { afterReady: true } : {}),
    object: entryObject(c),
  })))
  const tests = objects.tests.flatMap((t) => t.children.map((c) => ({ test: t.name, digest: c.digest, object: entryObject(c) })))
  return {
    'manifests.json': manifests,
    'tests.json': tests,
    'workflow.json': objects.workflow ? objects.workflow.manifest : null,
    'resolved.json': resolvedOf(recipe, rendered),
  }
}

/** The revision-independent digest of a render (64 hex), as written in the snapshot's `digest` key. */
export function renderDigest(recipe: WorkflowRecipe, rendered: RenderOk, config: RecipeConfig): string {
  return sha256OfCanonical(content(recipe, rendered, buildManifests(recipe, rendered, config, 0)))
}

export type SnapshotResult =
  | { ok: true; configMap: Manifest & { data: Record<string, string> }; digest: string; sizeBytes: number; objects: RecipeObjects }
  | { ok: false; error: SpecError; sizeBytes: number }

/**
 * spec §7.9: the snapshot ConfigMap of revision `revision` (owned by the recipe, labels §5.3 with
 * `purko.io/component: revision`), or `RevisionTooLarge` when its data exceed 900 KiB
 * (message `the rendered revision is <n> KiB, more than 900 KiB`, `<n>` rounded up).
 * Also returns the objects it recorded, so the caller applies exactly what was snapshotted.
 */
export function snapshot(recipe: WorkflowRecipe, rendered: RenderOk, config: RecipeConfig, revision: number): SnapshotResult {
  const objects = buildManifests(recipe, rendered, config, revision)
  const keys = content(recipe, rendered, objects)
  const digest = renderDigest(recipe, rendered, config)
  const data: Record<string, string> = {
    'manifests.json': canonicalJson(keys['manifests.json']),
    'tests.json': canonicalJson(keys['tests.json']),
    'workflow.json': canonicalJson(keys['workflow.json']),
    'resolved.json': canonicalJson(keys['resolved.json']),
    generation: String(recipe.metadata.generation ?? 0),
    digest,
    'completed-jobs': '',
  }
  const ref = recipeRefOf(recipe)
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: childMeta(ref, revisionConfigMapName(ref.name, revision), ref.namespace, childLabels(ref, 'revision', revision)),
    data,
  }
  const sizeBytes = snapshotSize(configMap)
  if (sizeBytes > MAX_SNAPSHOT_BYTES) {
    return { ok: false, sizeBytes, error: { reason: 'RevisionTooLarge', message: `the rendered revision is ${Math.ceil(sizeBytes / 1024)} KiB, more than 900 KiB` } }
  }
  return { ok: true, configMap, digest, sizeBytes, objects }
}

/** Bytes of a snapshot: UTF-8 length of every data key and value (what counts against the ConfigMap limit). */
export function snapshotSize(configMap: { data: Record<string, string> }): number {
  const encoder = new TextEncoder()
  let bytes = 0
  for (const [k, v] of Object.entries(configMap.data)) bytes += encoder.encode(k).length + encoder.encode(v).length
  return bytes
}

/** Names in a snapshot's `completed-jobs` key. */
export function completedJobsOf(data: Record<string, string> | undefined): string[] {
  const raw = data?.['completed-jobs'] ?? ''
  return raw.split('\n').filter((n) => n.length > 0)
}

/** The `completed-jobs` value with `jobName` appended (unchanged when already listed). */
export function withCompletedJob(data: Record<string, string> | undefined, jobName: string): string {
  const names = completedJobsOf(data)
  if (!names.includes(jobName)) names.push(jobName)
  return names.join('\n')
}
