/**
 * The port verbs of the recipe controller (controller, gather, act, deletion, reads): the recipe,
 * its revision ConfigMaps, its children of any kind, the policies that judge it, what its Jobs'
 * pods tell, the names it checks, and its resync alarm.
 */
import { ENGINE_VERBS } from '../engine/controller.js'
import { childUses } from '../kube/child-uses.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import { KINETIC_KINDS } from './plan/deploy-plan.js'
import { ALARM_CHILD_USES, ALARM_VERBS } from '../ticks/alarm.js'

export const RECIPE_VERBS = [
  ...ENGINE_VERBS, ...ALARM_VERBS, 'getRecipe', 'patchRecipeMetadata', 'replaceRecipeStatus', 'listRecipePolicies',
  'getConfigMap', 'listConfigMaps', 'createConfigMap', 'replaceConfigMap', 'deleteConfigMap',
  'getChild', 'listChildren', 'applyChild', 'deleteChild', 'readJobLog', 'listPods', 'getNamespace', 'getSecret', 'getAgent',
] as const satisfies readonly (keyof Kube)[]
export type RecipeKube = KubeVerbs<typeof RECIPE_VERBS>
/** A recipe's children are of the kinds it renders (KINETIC_KINDS); its alarm is a PingSource. */
export const RECIPE_CHILD_USES = [...childUses(['getChild', 'listChildren', 'applyChild', 'deleteChild'], KINETIC_KINDS), ...ALARM_CHILD_USES]

/** Re-evaluating policies: every recipe and policy, the policies' status, and the recipes it re-plans. */
export const RECIPE_POLICY_VERBS = [
  ...RECIPE_VERBS, 'getRecipePolicy', 'listAllRecipes', 'replaceRecipePolicyStatus',
] as const satisfies readonly (keyof Kube)[]
export type RecipePolicyKube = KubeVerbs<typeof RECIPE_POLICY_VERBS>
