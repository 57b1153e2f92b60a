/**
 * The `dev.kinetic.recipe.*` CloudEvents of spec §13. Pure. Only transitions that name a
 * `cloudEventType` become CloudEvents; the rest are Kubernetes Events only. The id is the first
 * 32 hex of SHA-256 of `<uid>|<revision>|<type>|<detail>`, where the detail includes the
 * resourceVersion the reconcile planned on: a redelivered event that repeats a reconcile repeats
 * the ids, while the same transition happening again later gets a new one.
 */
import { CloudEvent } from 'cloudevents'
import { sha256Hex } from '../../core/sha256.js'
import type { WorkflowRecipe } from '../../schemas/workflowrecipe.js'
import type { RecipeTransition } from './lifecycle/plan-types.js'

export const RECIPE_SUBJECT_PREFIX = '/apis/purko.io/v1alpha1/namespaces'

/** `/apis/purko.io/v1alpha1/namespaces/<ns>/workflowrecipes/<name>`. */
export function recipeSubject(namespace: string, name: string): string {
  return `${RECIPE_SUBJECT_PREFIX}/${namespace}/workflowrecipes/${name}`
}

/** The CloudEvents of a reconcile's transitions, in order. */
export function recipeCloudEvents(source: string, recipe: WorkflowRecipe, seed: string, transitions: readonly RecipeTransition[]): CloudEvent<Record<string, unknown>>[] {
  const namespace = recipe.metadata.namespace ?? ''
  const name = recipe.metadata.name ?? ''
  const uid = recipe.metadata.uid ?? ''
  return transitions.filter((t) => t.cloudEventType !== undefined).map((t) => {
    const data: Record<string, unknown> = {
      namespace, recipe: name,
      generation: recipe.metadata.generation ?? 0,
      revision: recipe.status?.revision ?? 0,
      ...(t.data ?? {}),
    }
    const type = t.cloudEventType as string
    const detail = `${seed}|${t.reason}|${t.fieldPath ?? ''}|${t.message}`
    return new CloudEvent<Record<string, unknown>>({
      id: sha256Hex(`${uid}|${String(data.revision)}|${type}|${detail}`).slice(0, 32),
      type,
      source,
      subject: recipeSubject(namespace, name),
      datacontenttype: 'application/json',
      data,
    })
  })
}
