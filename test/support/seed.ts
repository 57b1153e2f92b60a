// What a test double of the API server is seeded with, and the order it is stored in.
import type { ChildObject } from '../../shared/kube/port.js'
import type { Agent } from '../../shared/schemas/agent.js'
import type { AgentAutonomyPolicy } from '../../shared/schemas/autonomypolicy.js'
import type { LLMProvider } from '../../shared/schemas/llmprovider.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import type { WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import type { WorkflowRecipePolicy } from '../../shared/schemas/workflowrecipepolicy.js'

/**
 * The objects a test starts from. `identities: false` leaves out the per-agent ServiceAccounts
 * that agent-changed would have made by the time a workflow runs.
 */
export interface SeedObjects {
  workflows?: Workflow[]; agents?: Agent[]; providers?: LLMProvider[]; policies?: AgentAutonomyPolicy[]; identities?: boolean
  recipes?: WorkflowRecipe[]; recipePolicies?: WorkflowRecipePolicy[]; children?: ChildObject[]
}

/** The seeding verbs a double offers. */
export interface Seedable {
  putRecipe(recipe: WorkflowRecipe): unknown
  putRecipePolicy(policy: WorkflowRecipePolicy): unknown
  putChild(child: ChildObject): unknown
  putWorkflow(workflow: Workflow): unknown
  putAgent(agent: Agent, opts: { identity?: boolean }): unknown
  putPolicy(policy: AgentAutonomyPolicy): unknown
  putProvider(provider: LLMProvider): unknown
}

/** Stores the seed objects, recipes and children first, providers last. */
export function seedInto(double: Seedable, objects: SeedObjects): void {
  for (const recipe of objects.recipes ?? []) double.putRecipe(recipe)
  for (const policy of objects.recipePolicies ?? []) double.putRecipePolicy(policy)
  for (const child of objects.children ?? []) double.putChild(child)
  for (const wf of objects.workflows ?? []) double.putWorkflow(wf)
  for (const agent of objects.agents ?? []) double.putAgent(agent, { identity: objects.identities !== false })
  for (const policy of objects.policies ?? []) double.putPolicy(policy)
  for (const provider of objects.providers ?? []) double.putProvider(provider)
}
