import { apiMessage, ConflictError, RefusedError } from '../../core/errors.js'
import { API_GROUP, API_VERSION_NAME } from '../../schemas/labels.js'
import { WorkflowRecipeSchema, type WorkflowRecipe, type WorkflowRecipeStatus } from '../../schemas/workflowrecipe.js'
import { WorkflowRecipePolicySchema, type WorkflowRecipePolicy, type WorkflowRecipePolicyStatus } from '../../schemas/workflowrecipepolicy.js'
import { apiStatus, classifyApiError, FIELD_MANAGER, itemsOf, parseAs, parseOrSkip, type KubeApi } from './kube-api.js'

const RECIPES = { group: API_GROUP, version: API_VERSION_NAME, plural: 'workflowrecipes' }
const RECIPE_POLICIES = { group: API_GROUP, version: API_VERSION_NAME, plural: 'workflowrecipepolicies' }

/** The port's verbs over WorkflowRecipes (a person's writes included) and the cluster's WorkflowRecipePolicies. */
export function recipeVerbs(api: KubeApi) {
  return {
    async getRecipe(namespace: string, name: string): Promise<WorkflowRecipe | null> {
      return api.getCustom(RECIPES, WorkflowRecipeSchema, 'WorkflowRecipe', namespace, name)
    },

    async listAllRecipes(): Promise<WorkflowRecipe[]> {
      return api.listAllCustom(RECIPES, WorkflowRecipeSchema)
    },

    async listRecipes(options: { namespace?: string; labelSelector?: string; limit?: number; continue?: string }): Promise<{ items: WorkflowRecipe[]; continue?: string }> {
      const query = {
        ...RECIPES,
        ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
        ...(options.limit ? { limit: options.limit } : {}),
        ...(options.continue ? { _continue: options.continue } : {}),
      }
      const { namespace } = options
      let list: unknown
      try {
        list = await (namespace ? api.custom.listNamespacedCustomObject({ ...query, namespace }) : api.custom.listClusterCustomObject(query))
      } catch (err) {
        // A malformed label selector (400) or an expired continue token (410) is the caller's to fix.
        const code = apiStatus(err)
        if (code === 400 || code === 410) throw new RefusedError(apiMessage({ cause: err }), code, { cause: err })
        throw classifyApiError(err, `Could not list WorkflowRecipes${namespace ? ` in ${namespace}` : ''}`)
      }
      const next = (list as { metadata?: { continue?: unknown } }).metadata?.continue
      return {
        items: itemsOf(list).flatMap((item) => parseOrSkip(WorkflowRecipeSchema, item)),
        ...(typeof next === 'string' && next !== '' ? { continue: next } : {}),
      }
    },

    async createRecipe(recipe: WorkflowRecipe, opts: { dryRun?: boolean } = {}): Promise<WorkflowRecipe | 'exists'> {
      const namespace = recipe.metadata.namespace ?? 'default'
      const name = recipe.metadata.name ?? ''
      const what = `create WorkflowRecipe ${namespace}/${name}`
      try {
        const raw = await api.custom.createNamespacedCustomObject({
          ...RECIPES, namespace, body: recipeBody(recipe), fieldManager: FIELD_MANAGER, ...(opts.dryRun ? { dryRun: 'All' } : {}),
        })
        return parseAs(WorkflowRecipeSchema, raw, `WorkflowRecipe ${namespace}/${name}`)
      } catch (err) {
        if (apiStatus(err) === 409) return 'exists'
        throw recipeWriteError(err, what)
      }
    },

    async replaceRecipe(recipe: WorkflowRecipe, opts: { dryRun?: boolean } = {}): Promise<WorkflowRecipe> {
      const namespace = recipe.metadata.namespace ?? 'default'
      const name = recipe.metadata.name ?? ''
      const what = `replace WorkflowRecipe ${namespace}/${name}`
      try {
        const raw = await api.custom.replaceNamespacedCustomObject({
          ...RECIPES, namespace, name, body: recipeBody(recipe), fieldManager: FIELD_MANAGER, ...(opts.dryRun ? { dryRun: 'All' } : {}),
        })
        return parseAs(WorkflowRecipeSchema, raw, `WorkflowRecipe ${namespace}/${name}`)
      } catch (err) {
        // Gone since it was read: the resourceVersion it was guarded by no longer exists either.
        if (apiStatus(err) === 404) throw new ConflictError(`Could not ${what}: it no longer exists`, { cause: err })
        throw recipeWriteError(err, what)
      }
    },

    async deleteRecipe(namespace: string, name: string): Promise<boolean> {
      try {
        await api.custom.deleteNamespacedCustomObject({ ...RECIPES, namespace, name })
        return true
      } catch (err) {
        if (apiStatus(err) === 404) return false
        throw classifyApiError(err, `Could not delete WorkflowRecipe ${namespace}/${name}`)
      }
    },

    async patchRecipeMetadata(
      namespace: string, name: string, resourceVersion: string,
      metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
    ): Promise<WorkflowRecipe> {
      return api.patchCustomMetadata(RECIPES, WorkflowRecipeSchema, 'WorkflowRecipe', namespace, name, resourceVersion, metadata)
    },

    async replaceRecipeStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowRecipeStatus): Promise<WorkflowRecipe> {
      return api.replaceCustomStatus(RECIPES, WorkflowRecipeSchema, 'WorkflowRecipe', namespace, name, resourceVersion, status)
    },

    async listRecipePolicies(): Promise<WorkflowRecipePolicy[]> {
      return api.listAllCustom(RECIPE_POLICIES, WorkflowRecipePolicySchema)
    },

    async getRecipePolicy(name: string): Promise<WorkflowRecipePolicy | null> {
      const raw = await api.orNull(() => api.custom.getClusterCustomObject({ ...RECIPE_POLICIES, name }), `get WorkflowRecipePolicy ${name}`)
      return raw === null ? null : parseOrSkip(WorkflowRecipePolicySchema, raw)[0] ?? null
    },

    async replaceRecipePolicyStatus(name: string, resourceVersion: string, status: WorkflowRecipePolicyStatus): Promise<WorkflowRecipePolicy> {
      const raw = await api.call(
        () => api.custom.replaceClusterCustomObjectStatus({
          ...RECIPE_POLICIES, name,
          body: { apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'WorkflowRecipePolicy', metadata: { name, resourceVersion }, status },
        }),
        `update status of WorkflowRecipePolicy ${name}`,
      )
      return parseAs(WorkflowRecipePolicySchema, raw, `WorkflowRecipePolicy ${name}`)
    },
  }
}

/** A recipe as the API server takes it: apiVersion/kind set, and never the status (a subresource). */
function recipeBody(recipe: WorkflowRecipe): Record<string, unknown> {
  const { status: _status, ...rest } = recipe
  return { ...rest, apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'WorkflowRecipe' }
}

/** A refused recipe write: 422 (invalid) carries the API server's causes; everything else as classifyApiError. */
function recipeWriteError(err: unknown, what: string): Error {
  if (apiStatus(err) !== 422) return classifyApiError(err, `Could not ${what}`)
  const status = statusBody(err)
  const causes = (status?.details?.causes ?? []).flatMap((c) => typeof c?.message === 'string'
    ? [{ ...(typeof c.field === 'string' && c.field !== '' ? { field: c.field } : {}), message: c.message }]
    : [])
  return new RefusedError(apiMessage({ cause: err }), 422, { cause: err, causes })
}

/** The Status object an API error carries (client-node gives it as a string or already parsed). */
function statusBody(err: unknown): { details?: { causes?: Array<{ field?: unknown; message?: unknown }> } } | undefined {
  const body = (err as { body?: unknown }).body
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as never
    } catch {
      return undefined
    }
  }
  return body && typeof body === 'object' ? body as never : undefined
}
