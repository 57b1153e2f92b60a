/**
 * Labels and annotations of a recipe's children (spec §5.3). Pure.
 *
 * Every child: `app.kubernetes.io/managed-by: kinetic`, `app.kubernetes.io/part-of: <recipe>`,
 * `purko.io/recipe`, `purko.io/recipe-namespace`, `purko.io/recipe-uid`, `purko.io/component`,
 * and (top-level objects only) `purko.io/revision`. Workload objects and Services add
 * `app.kubernetes.io/name`, `app.kubernetes.io/instance` (the selector) and `purko.io/workload`;
 * MCPServers and copied Secrets add `purko.io/workload`; test Jobs add `purko.io/test`. Pod
 * templates carry managed-by, recipe, recipe-namespace, recipe-uid and the workload (or test)
 * labels, never the revision and never `purko.io/workflow`.
 */

export const LABEL_MANAGED_BY_APP = 'app.kubernetes.io/managed-by'
export const LABEL_PART_OF = 'app.kubernetes.io/part-of'
export const LABEL_APP_NAME = 'app.kubernetes.io/name'
export const LABEL_INSTANCE = 'app.kubernetes.io/instance'
export const LABEL_RECIPE = 'purko.io/recipe'
export const LABEL_RECIPE_NAMESPACE = 'purko.io/recipe-namespace'
export const LABEL_RECIPE_UID = 'purko.io/recipe-uid'
export const LABEL_WORKLOAD = 'purko.io/workload'
export const LABEL_TEST = 'purko.io/test'
export const LABEL_COMPONENT = 'purko.io/component'
export const LABEL_REVISION = 'purko.io/revision'
export const ANNOTATION_MANIFEST_DIGEST = 'purko.io/manifest-digest'
export const ANNOTATION_SOURCE_SECRET = 'purko.io/source-secret'
/** Value of `app.kubernetes.io/managed-by` on every child. */
export const MANAGED_BY = 'kinetic'

/** Values of `purko.io/component`. */
export type Component = 'workload' | 'service' | 'mcpserver' | 'secret' | 'test' | 'workflow' | 'revision'

/** The recipe a child belongs to. */
export interface RecipeRef {
  name: string
  namespace: string
  uid: string
}

/** Labels of the recipe on a pod template (no part-of, no component, no revision). */
function recipePodLabels(recipe: RecipeRef): Record<string, string> {
  return {
    [LABEL_MANAGED_BY_APP]: MANAGED_BY,
    [LABEL_RECIPE]: recipe.name,
    [LABEL_RECIPE_NAMESPACE]: recipe.namespace,
    [LABEL_RECIPE_UID]: recipe.uid,
  }
}

/** Labels of every top-level child: the recipe's, the component and the revision that writes it. */
export function childLabels(recipe: RecipeRef, component: Component, revision: number): Record<string, string> {
  return {
    ...recipePodLabels(recipe),
    [LABEL_PART_OF]: recipe.name,
    [LABEL_COMPONENT]: component,
    [LABEL_REVISION]: String(revision),
  }
}

/** The selector of a workload's pods and Service: exactly `{app.kubernetes.io/instance: base(w)}`. */
export function selectorLabels(baseOfWorkload: string): Record<string, string> {
  return { [LABEL_INSTANCE]: baseOfWorkload }
}

/** Labels of a workload object (`workload`) or its Service (`service`). */
export function workloadObjectLabels(recipe: RecipeRef, component: 'workload' | 'service', workload: string, baseOfWorkload: string, revision: number): Record<string, string> {
  return {
    ...childLabels(recipe, component, revision),
    [LABEL_APP_NAME]: workload,
    [LABEL_INSTANCE]: baseOfWorkload,
    [LABEL_WORKLOAD]: workload,
  }
}

/** Labels of a workload's MCPServer or copied Secret. */
export function workloadRelatedLabels(recipe: RecipeRef, component: 'mcpserver' | 'secret', workload: string, revision: number): Record<string, string> {
  return { ...childLabels(recipe, component, revision), [LABEL_WORKLOAD]: workload }
}

/** Labels of a workload's pod template (also a StatefulSet's claim templates and a CronJob's job template). */
export function workloadPodLabels(recipe: RecipeRef, workload: string, baseOfWorkload: string): Record<string, string> {
  return {
    ...recipePodLabels(recipe),
    [LABEL_APP_NAME]: workload,
    [LABEL_INSTANCE]: baseOfWorkload,
    [LABEL_WORKLOAD]: workload,
  }
}

/** Labels of a test Job. */
export function testJobLabels(recipe: RecipeRef, test: string, revision: number): Record<string, string> {
  return { ...childLabels(recipe, 'test', revision), [LABEL_TEST]: test }
}

/** Labels of a test Job's pod template. */
export function testPodLabels(recipe: RecipeRef, test: string): Record<string, string> {
  return { ...recipePodLabels(recipe), [LABEL_TEST]: test }
}
