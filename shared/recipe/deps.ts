import { recipeConfig, type RecipeConfig } from './plan/config.js'
import type { EngineDeps } from '../engine/controller.js'
import type { Kube } from '../kube/port.js'
import { realEngineDeps } from '../engine/deps.js'

/** What the recipe functions need: the engine's dependencies and the spec §1.1 placement; `K` the port verbs they may call. */
export interface RecipeDeps<K = Kube> extends EngineDeps<K> {
  recipes: RecipeConfig
}

/**
 * Real dependencies of a recipe function; a bad spec §1.1 value stops it at start. Kept apart from
 * the controller so a process starts without loading it (echoes never need it).
 */
export function realRecipeDeps(functionName: string): RecipeDeps {
  return { ...realEngineDeps(functionName), recipes: recipeConfig(process.env) }
}
