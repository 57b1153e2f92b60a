/**
 * The `structuredContent` of list-recipes, get-recipe and get-recipe-status (spec §14.3),
 * from the recipe as stored. Every listed key is present; what the recipe does not say is
 * `null` (or an empty list), so a caller never has to guess a shape. Pure.
 */
import { ANNOTATION_DEPRECATE, approveCommand } from '../recipe/plan/lifecycle/annotations.js'
import { isTemplate } from '../recipe/plan/render.js'
import type { WorkflowRecipe } from '../schemas/workflowrecipe.js'
import type { ListRecipesArgs } from './tool-inputs.js'

type Json = Record<string, unknown>

function ref(recipe: WorkflowRecipe): { namespace: string; name: string } {
  return { namespace: recipe.metadata.namespace ?? '', name: recipe.metadata.name ?? '' }
}

function isDeprecated(recipe: WorkflowRecipe): boolean {
  return recipe.metadata.annotations?.[ANNOTATION_DEPRECATE] === 'true' || recipe.status?.phase === 'Deprecated'
}

/** Pure: whether a listed recipe passes the `phase` and `kind` filters (applied after the API server's label selector). */
export function matchesListFilters(recipe: WorkflowRecipe, args: Pick<ListRecipesArgs, 'phase' | 'kind'>): boolean {
  const template = isTemplate(recipe)
  if (args.kind === 'templates' && !template) return false
  if (args.kind === 'instances' && template) return false
  if (args.phase && args.phase.length > 0) return args.phase.some((p) => p === (recipe.status?.phase ?? 'Candidate'))
  return true
}

/** Pure: one entry of list-recipes. */
export function recipeSummary(recipe: WorkflowRecipe): Json {
  const st = recipe.status ?? {}
  return {
    ...ref(recipe),
    template: isTemplate(recipe),
    deprecated: isDeprecated(recipe),
    phase: st.phase ?? null,
    reason: st.reason ?? null,
    description: recipe.spec.description ?? null,
    version: recipe.spec.version ?? null,
    profile: st.resolved?.profile ?? recipe.spec.profile ?? null,
    revision: st.revision ?? null,
    currentRevision: st.currentRevision ?? null,
    readyWorkloads: st.readyWorkloads ?? null,
    mcpEndpoints: (st.mcpServers ?? []).flatMap((m) => (m.url ? [{ workload: m.workload, url: m.url }] : [])),
    createdAt: recipe.metadata.creationTimestamp ?? null,
  }
}

/** Pure: get-recipe: the spec, its inputs as a caller fills them in, and the profile names. */
export function recipeDetail(recipe: WorkflowRecipe): Json {
  return {
    ...ref(recipe),
    template: isTemplate(recipe),
    generation: recipe.metadata.generation ?? null,
    labels: recipe.metadata.labels ?? {},
    spec: recipe.spec,
    inputs: (recipe.spec.inputs ?? []).map((i) => ({
      name: i.name,
      type: i.type ?? 'string',
      // An input without a default must be given (by spec.values, the profile or the caller).
      required: i.default === undefined,
      ...(i.default !== undefined ? { default: i.default } : {}),
      ...(i.description !== undefined ? { description: i.description } : {}),
      ...(i.enum !== undefined ? { enum: i.enum } : {}),
    })),
    profiles: (recipe.spec.profiles ?? []).map((p) => p.name),
    phase: recipe.status?.phase ?? null,
  }
}

/** Pure: get-recipe-status, with the latest `history` phase changes (most recent last). */
export function recipeStatusView(recipe: WorkflowRecipe, history: number): Json {
  const st = recipe.status ?? {}
  const { namespace, name } = ref(recipe)
  const generation = recipe.metadata.generation ?? null
  const waiting = st.phase === 'PendingApproval'
  const approvalGeneration = st.approval?.generation ?? recipe.metadata.generation ?? 1
  return {
    namespace, name,
    phase: st.phase ?? null,
    reason: st.reason ?? null,
    message: st.message ?? null,
    generation,
    observedGeneration: st.observedGeneration ?? null,
    revision: st.revision ?? null,
    currentRevision: st.currentRevision ?? null,
    lastGoodRevision: st.lastGoodRevision ?? null,
    readyWorkloads: st.readyWorkloads ?? null,
    conditions: (st.conditions ?? []).map((c) => ({ type: c.type, status: c.status, reason: c.reason ?? null, message: c.message ?? null })),
    approval: st.approval ?? null,
    ...(waiting ? { approveCommand: approveCommand(namespace, name, approvalGeneration) } : {}),
    policy: st.policy ?? null,
    workloads: st.workloads ?? [],
    tests: st.tests ?? [],
    ...(st.workflow ? { workflow: st.workflow } : {}),
    mcpServers: st.mcpServers ?? [],
    history: history > 0 ? (st.history ?? []).slice(-history) : [],
  }
}

/**
 * Pure: delete-recipe's `deletionOrder`: the workloads in reverse topological order (the last
 * deployed goes first, spec §11), from the order the controller resolved.
 */
export function deletionOrder(recipe: WorkflowRecipe): string[] {
  return [...(recipe.status?.resolved?.order ?? [])].reverse()
}
