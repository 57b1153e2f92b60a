import type { z } from 'zod'
import { API_GROUP, API_VERSION_NAME } from '../schemas/labels.js'
import { AgentSchema } from '../schemas/agent.js'
import { WorkflowSchema } from '../schemas/workflow.js'
import { AgentAutonomyPolicySchema } from '../schemas/autonomypolicy.js'
import { MCPServerSchema } from '../schemas/mcpserver.js'
import { LLMProviderSchema } from '../schemas/llmprovider.js'
import { MemoryProviderSchema } from '../schemas/memoryprovider.js'
import { WorkflowRecipeSchema } from '../schemas/workflowrecipe.js'
import { WorkflowRecipePolicySchema } from '../schemas/workflowrecipepolicy.js'
import { toCrdSchema, type JsonSchemaProps } from './structural.js'

/** One `additionalPrinterColumns` entry. */
export interface PrinterColumn {
  name: string
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date'
  jsonPath: string
  priority?: number
  description?: string
}

/** Everything needed to render one purko.io CRD besides its schema's shape. */
export interface KindDefinition {
  kind: string
  plural: string
  singular: string
  shortNames: string[]
  schema: z.ZodType
  printerColumns: PrinterColumn[]
  /** Default Namespaced. */
  scope?: 'Namespaced' | 'Cluster'
}

/** An apiextensions.k8s.io/v1 CustomResourceDefinition as Kinetic writes it. */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1'
  kind: 'CustomResourceDefinition'
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  spec: {
    group: string
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames?: string[]; categories?: string[] }
    scope: 'Namespaced' | 'Cluster'
    versions: {
      name: string
      served: boolean
      storage: boolean
      subresources?: { status?: Record<string, never>; scale?: Record<string, string> }
      additionalPrinterColumns?: PrinterColumn[]
      schema: { openAPIV3Schema: JsonSchemaProps }
    }[]
  }
}

const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }

/** The purko.io kinds (purko's six and Kinetic's recipe kinds), with names, short names and purko's printer columns (plus Kinetic's autonomy columns). */
export const KINDS: readonly KindDefinition[] = [
  {
    kind: 'Agent', plural: 'agents', singular: 'agent', shortNames: ['ag'], schema: AgentSchema,
    printerColumns: [
      { name: 'Type', type: 'string', jsonPath: '.spec.type' },
      { name: 'Model', type: 'string', jsonPath: '.spec.model.name' },
      { name: 'Status', type: 'string', jsonPath: '.status.phase' },
      { name: 'Level', type: 'string', jsonPath: '.status.shuHaRi.currentLevel' },
      { name: 'Autonomy', type: 'string', jsonPath: '.spec.autonomyLevel' },
      age,
    ],
  },
  {
    kind: 'Workflow', plural: 'workflows', singular: 'workflow', shortNames: ['wf'], schema: WorkflowSchema,
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Steps', type: 'integer', jsonPath: '.status.totalSteps' },
      { name: 'Completed', type: 'integer', jsonPath: '.status.completedSteps' },
      age,
    ],
  },
  {
    kind: 'MCPServer', plural: 'mcpservers', singular: 'mcpserver', shortNames: ['mcp'], schema: MCPServerSchema,
    printerColumns: [
      { name: 'Image', type: 'string', jsonPath: '.spec.image', priority: 1 },
      { name: 'Port', type: 'integer', jsonPath: '.spec.port' },
      { name: 'Category', type: 'string', jsonPath: '.spec.category' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Tools', type: 'integer', jsonPath: '.status.toolCount' },
      age,
    ],
  },
  {
    kind: 'LLMProvider', plural: 'llmproviders', singular: 'llmprovider', shortNames: ['llm'], schema: LLMProviderSchema,
    printerColumns: [
      { name: 'Type', type: 'string', jsonPath: '.spec.type' },
      { name: 'Model', type: 'string', jsonPath: '.spec.model' },
      { name: 'Default', type: 'boolean', jsonPath: '.spec.default' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Models', type: 'integer', jsonPath: '.status.availableModels' },
      age,
    ],
  },
  {
    kind: 'AgentAutonomyPolicy', plural: 'agentautonomypolicies', singular: 'agentautonomypolicy', shortNames: ['aap'],
    schema: AgentAutonomyPolicySchema,
    printerColumns: [
      { name: 'Shu->Ha Actions', type: 'integer', jsonPath: '.spec.shuHaRi.progressionCriteria.shuToHa.minimumActionsCompleted' },
      { name: 'Ha->Ri Actions', type: 'integer', jsonPath: '.spec.shuHaRi.progressionCriteria.haToRi.minimumActionsCompleted' },
      { name: 'Rollback', type: 'boolean', jsonPath: '.spec.rollback.enabled' },
      { name: 'Agents', type: 'integer', jsonPath: '.status.agentsEvaluated' },
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      age,
    ],
  },
  {
    kind: 'MemoryProvider', plural: 'memoryproviders', singular: 'memoryprovider', shortNames: ['mem'],
    schema: MemoryProviderSchema,
    printerColumns: [
      { name: 'Type', type: 'string', jsonPath: '.spec.type' },
      { name: 'Default', type: 'boolean', jsonPath: '.spec.default' },
      { name: 'Healthy', type: 'boolean', jsonPath: '.status.healthy' },
      { name: 'Entries', type: 'integer', jsonPath: '.status.entryCount' },
      age,
    ],
  },
  {
    // Kinetic's own kinds (spec §2 and §10); purko has no counterpart.
    kind: 'WorkflowRecipe', plural: 'workflowrecipes', singular: 'workflowrecipe', shortNames: ['wr', 'recipe'],
    schema: WorkflowRecipeSchema,
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Revision', type: 'integer', jsonPath: '.status.currentRevision' },
      { name: 'Ready', type: 'string', jsonPath: '.status.readyWorkloads' },
      { name: 'Reason', type: 'string', jsonPath: '.status.reason', priority: 1 },
      age,
    ],
  },
  {
    kind: 'WorkflowRecipePolicy', plural: 'workflowrecipepolicies', singular: 'workflowrecipepolicy', shortNames: ['wrp', 'recipepolicy'],
    schema: WorkflowRecipePolicySchema, scope: 'Cluster',
    printerColumns: [
      { name: 'Mode', type: 'string', jsonPath: '.spec.mode' },
      { name: 'Approval', type: 'boolean', jsonPath: '.spec.requireApproval' },
      { name: 'Violations', type: 'integer', jsonPath: '.status.totalViolations' },
      age,
    ],
  },
]

/** Kinds purko defines (the compatibility tests compare these with purko's CRDs). */
export const PURKO_KINDS: ReadonlySet<string> = new Set(['Agent', 'Workflow', 'MCPServer', 'LLMProvider', 'AgentAutonomyPolicy', 'MemoryProvider'])

/** Pure: the CustomResourceDefinition of one kind, its schema generated from the zod source. */
export function crdFor(def: KindDefinition): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${API_GROUP}` },
    spec: {
      group: API_GROUP,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
      },
      scope: def.scope ?? 'Namespaced',
      versions: [{
        name: API_VERSION_NAME,
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: def.printerColumns,
        schema: { openAPIV3Schema: toCrdSchema(def.schema) },
      }],
    },
  }
}

/** Pure: the CRDs of all purko.io kinds, in a stable order. */
export function allCrds(): CustomResourceDefinition[] {
  return KINDS.map(crdFor)
}
