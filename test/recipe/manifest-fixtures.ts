// Hand-built rendered workloads for the manifest tests (spec §5), so they do not depend on
// the renderer: a workload is parsed by the schema (defaults applied) and given its target
// namespace and base(w) the way spec §5.1 and §5.2 say.
import { WorkloadSchema, RecipeTestSchema, WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import type { RenderedTest, RenderedWorkload, RenderOk } from '../../shared/recipe/plan/rendered.js'
import { baseName } from '../../shared/recipe/plan/names.js'
import type { RecipeRef } from '../../shared/recipe/plan/labels.js'

export const RECIPE: RecipeRef = { name: 'shop', namespace: 'recipes-demo', uid: '11111111-2222-3333-4444-555555555555' }

/** A rendered workload from plain fields (already-rendered strings; `replicas` an integer). */
export function rendered(fields: Record<string, unknown>, namespace?: string): RenderedWorkload {
  const { replicas, ...rest } = fields
  const { replicas: _none, ...w } = WorkloadSchema.parse(rest)
  const ns = namespace ?? (w.transport ? 'mcp-server' : 'sandbox-recipes')
  const out: RenderedWorkload = { ...w, namespace: ns, base: baseName(RECIPE.namespace, RECIPE.name, w.name) }
  if (typeof replicas === 'number') out.replicas = replicas
  return out
}

export function renderedTest(fields: Record<string, unknown>): RenderedTest {
  return { ...RecipeTestSchema.parse(fields), namespace: 'sandbox-recipes' }
}

export function recipeWith(spec: Record<string, unknown>, meta: Record<string, unknown> = {}): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1',
    kind: 'WorkflowRecipe',
    metadata: { name: RECIPE.name, namespace: RECIPE.namespace, uid: RECIPE.uid, generation: 3, ...meta },
    spec,
  })
}

export function renderOk(workloads: RenderedWorkload[], extra: Partial<RenderOk> = {}): RenderOk {
  return {
    ok: true, inputs: {}, computed: {}, profile: '', workloads, excluded: [], order: workloads.map((w) => w.name), tests: [], ...extra,
  }
}
