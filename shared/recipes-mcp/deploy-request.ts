/**
 * deploy-recipe's arguments → the WorkflowRecipe to write (spec §14.3): exactly one source
 * (a template instantiated, a spec, or a manifest), `profile` replacing `spec.profile`,
 * `values` merged over `spec.values`, labels without `purko.io/` keys, no reserved annotation
 * in the input, `purko.io/deployed-by`/`deployed-via: mcp` set, and an existing recipe replaced
 * only when it was deployed through this tool. Pure: every refusal is a ToolError.
 */
import { parseAllDocuments } from 'yaml'
import { ANNOTATION_ORPHAN } from '../recipe/plan/deletion.js'
import {
  ANNOTATION_APPROVE, ANNOTATION_APPROVED_BY, ANNOTATION_DEPRECATE, ANNOTATION_REJECT, ANNOTATION_RETRY, ANNOTATION_ROLLBACK,
} from '../recipe/plan/lifecycle/annotations.js'
import { isTemplate, TEMPLATE_ANNOTATION } from '../recipe/plan/render.js'
import { API_VERSION } from '../schemas/labels.js'
import type { WorkflowRecipe } from '../schemas/workflowrecipe.js'
import { ToolError } from './errors.js'
import { MAX_MANIFEST_BYTES, type DeployRecipeArgs } from './tool-inputs.js'

export const ANNOTATION_RECIPE_TEMPLATE = 'purko.io/recipe-template'
export const ANNOTATION_DEPLOYED_BY = 'purko.io/deployed-by'
export const ANNOTATION_DEPLOYED_VIA = 'purko.io/deployed-via'
export const DEPLOYED_VIA_MCP = 'mcp'
const RESERVED_LABEL_PREFIX = 'purko.io/'

/** Annotations an input may not carry: user actions and the ownership marks the tool sets itself. */
export const RESERVED_ANNOTATIONS: readonly string[] = [
  ANNOTATION_APPROVE, ANNOTATION_REJECT, ANNOTATION_APPROVED_BY, ANNOTATION_RETRY, ANNOTATION_ROLLBACK, ANNOTATION_ORPHAN,
  ANNOTATION_DEPLOYED_BY, ANNOTATION_DEPLOYED_VIA,
]

type Json = Record<string, unknown>

/** Where the spec comes from; a template still has to be read (and authorized). */
export type DeploySource =
  | { kind: 'template'; namespace: string; name: string }
  | { kind: 'body'; body: RecipeBody }

/** What a source contributes to the recipe. */
export interface RecipeBody {
  spec: Json
  labels?: Record<string, string>
  annotations?: Record<string, string>
}

/** Pure: the one source of the call, after the semantic checks that need no cluster state. */
export function deploySourceOf(args: DeployRecipeArgs): DeploySource {
  const given = (['template', 'spec', 'manifest'] as const).filter((k) => args[k] !== undefined)
  if (given.length !== 1) {
    throw new ToolError('InvalidArguments', given.length === 0
      ? 'Give exactly one of template, spec or manifest'
      : `Give exactly one of template, spec or manifest, not ${given.join(' and ')}`)
  }
  const reserved = Object.keys(args.labels ?? {}).filter((k) => k.startsWith(RESERVED_LABEL_PREFIX))
  if (reserved.length > 0) throw new ToolError('InvalidArguments', `labels may not use the ${RESERVED_LABEL_PREFIX} prefix: ${reserved.join(', ')}`)
  if (args.template) return { kind: 'template', namespace: args.template.namespace ?? args.namespace, name: args.template.name }
  if (args.spec) return { kind: 'body', body: { spec: args.spec } }
  return { kind: 'body', body: parseManifest(args.manifest ?? '', args.namespace, args.name) }
}

/**
 * Pure: one WorkflowRecipe from YAML or JSON (JSON is YAML), at most 512 KiB; its name and
 * namespace, when present, must be the call's; its status is ignored.
 */
export function parseManifest(text: string, namespace: string, name: string): RecipeBody {
  const bytes = new TextEncoder().encode(text).length
  if (bytes > MAX_MANIFEST_BYTES) throw new ToolError('InvalidArguments', `manifest is ${bytes} bytes, more than the ${MAX_MANIFEST_BYTES} allowed`)
  const docs = parseAllDocuments(text, { prettyErrors: false })
  if (!Array.isArray(docs)) throw new ToolError('InvalidArguments', 'manifest is empty')
  const broken = docs.find((d) => d.errors.length > 0)
  if (broken) throw new ToolError('InvalidArguments', `manifest is not valid YAML or JSON: ${broken.errors[0]!.message}`)
  let values: unknown[]
  try {
    // Empty documents (a leading comment, a trailing ---) are no documents.
    values = docs.map((d) => d.toJS({ maxAliasCount: 100 }) as unknown).filter((v) => v !== null && v !== undefined)
  } catch (err) {
    throw new ToolError('InvalidArguments', `manifest is not valid YAML or JSON: ${err instanceof Error ? err.message : String(err)}`)
  }
  if (values.length !== 1) throw new ToolError('InvalidArguments', `manifest must hold exactly one WorkflowRecipe, found ${values.length} documents`)
  const object = values[0]
  if (!isObject(object)) throw new ToolError('InvalidArguments', 'manifest must be a WorkflowRecipe object')
  if (object.apiVersion !== API_VERSION || object.kind !== 'WorkflowRecipe') {
    throw new ToolError('InvalidArguments', `manifest is a ${String(object.kind ?? 'object without kind')} (${String(object.apiVersion ?? 'no apiVersion')}), not a ${API_VERSION} WorkflowRecipe`)
  }
  const metadata = isObject(object.metadata) ? object.metadata : {}
  if (metadata.name !== undefined && metadata.name !== name) {
    throw new ToolError('InvalidArguments', `manifest metadata.name ${JSON.stringify(metadata.name)} is not the name argument ${JSON.stringify(name)}`)
  }
  if (metadata.namespace !== undefined && metadata.namespace !== namespace) {
    throw new ToolError('InvalidArguments', `manifest metadata.namespace ${JSON.stringify(metadata.namespace)} is not the namespace argument ${JSON.stringify(namespace)}`)
  }
  if (!isObject(object.spec)) throw new ToolError('InvalidArguments', 'manifest has no spec object')
  const labels = stringMap(metadata.labels, 'metadata.labels')
  const annotations = stringMap(metadata.annotations, 'metadata.annotations')
  const reserved = Object.keys(annotations ?? {}).filter((k) => RESERVED_ANNOTATIONS.includes(k))
  if (reserved.length > 0) throw new ToolError('InvalidArguments', `manifest carries reserved annotations: ${reserved.join(', ')}`)
  return { spec: object.spec, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) }
}

/**
 * Pure: what a template contributes (spec §7.7): its spec, no `purko.io/template`, and
 * `purko.io/recipe-template: <ns>/<name>`. Its own labels and annotations stay with it.
 */
export function instantiateTemplate(template: WorkflowRecipe): RecipeBody {
  const ref = `${template.metadata.namespace ?? ''}/${template.metadata.name ?? ''}`
  if (!isTemplate(template)) throw new ToolError('NotATemplate', `WorkflowRecipe ${ref} is not a template (it lacks ${TEMPLATE_ANNOTATION}: "true")`)
  if (template.metadata.annotations?.[ANNOTATION_DEPRECATE] === 'true' || template.status?.phase === 'Deprecated') {
    throw new ToolError('TemplateDeprecated', `Template ${ref} is deprecated`)
  }
  return { spec: structuredClone(template.spec) as Json, annotations: { [ANNOTATION_RECIPE_TEMPLATE]: ref } }
}

/** Pure: the recipe the call asks for, as it would be created. */
export function desiredRecipe(args: DeployRecipeArgs, body: RecipeBody, username: string): WorkflowRecipe {
  const spec: Json = { ...body.spec }
  if (args.profile !== undefined) spec.profile = args.profile
  if (args.values !== undefined) spec.values = { ...(isObject(spec.values) ? spec.values : {}), ...args.values }
  const labels = { ...(body.labels ?? {}), ...(args.labels ?? {}) }
  const annotations = { ...(body.annotations ?? {}), [ANNOTATION_DEPLOYED_BY]: username, [ANNOTATION_DEPLOYED_VIA]: DEPLOYED_VIA_MCP }
  return {
    apiVersion: API_VERSION,
    kind: 'WorkflowRecipe',
    metadata: { name: args.name, namespace: args.namespace, ...(Object.keys(labels).length > 0 ? { labels } : {}), annotations },
    // Sent as given: the API server validates it (CRD schema, 422) and applies its defaults.
    spec: spec as WorkflowRecipe['spec'],
  }
}

/** Pure: whether the tool may replace this recipe (agents never overwrite GitOps or hand-made ones). */
export function isManagedByMcp(recipe: WorkflowRecipe): boolean {
  return recipe.metadata.annotations?.[ANNOTATION_DEPLOYED_VIA] === DEPLOYED_VIA_MCP
}

/**
 * Pure: the object to write: the desired recipe when there is none, else the existing one with
 * the new spec, the labels and annotations merged over its own (a stale
 * `purko.io/recipe-template` goes when the spec no longer comes from a template), guarded by
 * its resourceVersion.
 */
export function recipeToWrite(desired: WorkflowRecipe, existing: WorkflowRecipe | null): WorkflowRecipe {
  if (!existing) return desired
  if (!isManagedByMcp(existing)) {
    throw new ToolError('NotManagedByMcp', `WorkflowRecipe ${existing.metadata.namespace}/${existing.metadata.name} was not deployed through MCP (it lacks ${ANNOTATION_DEPLOYED_VIA}: ${DEPLOYED_VIA_MCP}); it is not replaced`)
  }
  if (existing.metadata.deletionTimestamp) {
    // Its spec would be ignored and the recipe gone moments later: try again once it is.
    throw new ToolError('Conflict', `WorkflowRecipe ${existing.metadata.namespace}/${existing.metadata.name} is being deleted; deploy it again once it is gone`)
  }
  const { [ANNOTATION_RECIPE_TEMPLATE]: _stale, ...kept } = existing.metadata.annotations ?? {}
  const labels = { ...(existing.metadata.labels ?? {}), ...(desired.metadata.labels ?? {}) }
  const { status: _status, ...rest } = existing
  return {
    ...rest,
    metadata: {
      ...existing.metadata,
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
      annotations: { ...kept, ...(desired.metadata.annotations ?? {}) },
    },
    spec: desired.spec,
  }
}

/**
 * Pure: the phase the deploy leaves the recipe in: a new generation starts at `Candidate` (spec §7.6
 * T2) except in `Deprecated`, where a spec change is ignored; an unchanged spec keeps its phase.
 */
export function phaseAfterDeploy(existing: WorkflowRecipe | null, written: WorkflowRecipe): string {
  if (!existing) return 'Candidate'
  const phase = existing.status?.phase ?? 'Candidate'
  if (phase === 'Deprecated') return phase
  return written.metadata.generation !== existing.metadata.generation ? 'Candidate' : phase
}

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function stringMap(v: unknown, field: string): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined
  if (!isObject(v) || Object.values(v).some((x) => typeof x !== 'string')) {
    throw new ToolError('InvalidArguments', `manifest ${field} must map strings to strings`)
  }
  return v as Record<string, string>
}
