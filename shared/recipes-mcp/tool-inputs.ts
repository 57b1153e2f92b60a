/**
 * The input schemas of the five recipes MCP tools (spec §14.3), as strict zod objects: the
 * same schema validates a call (a violation is JSON-RPC -32602) and becomes the JSON Schema that
 * `tools/list` shows (`additionalProperties: false`, the length, pattern and count limits).
 * "Exactly one of template/spec/manifest" and the label key rule are the handler's
 * (InvalidArguments), not `oneOf`, which many MCP clients mishandle.
 */
import { z } from 'zod'
import { RECIPE_NAME_MAX, RECIPE_NAME_PATTERN, RECIPE_PHASES } from '../schemas/workflowrecipe.js'

/** A manifest is at most 512 KiB (spec §14.3). */
export const MAX_MANIFEST_BYTES = 512 * 1024
export const MAX_LABELS = 16
export const MAX_VALUES = 64
export const DEFAULT_LIST_LIMIT = 100
export const MAX_LIST_LIMIT = 500
export const DEFAULT_HISTORY = 5
export const MAX_HISTORY = 20

const DNS1123_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'

const namespace = () => z.string().max(63).regex(new RegExp(DNS1123_LABEL))
/** Names of existing recipes: at most 63 characters (spec §14.3); the CRD keeps them to 40. */
const anyName = () => z.string().max(63).regex(new RegExp(DNS1123_LABEL))
/** At most `max` keys: zod checks it, the JSON Schema says it. */
const atMost = <T extends z.ZodType>(record: T, max: number) =>
  record.refine((v) => Object.keys(v as object).length <= max, { message: `at most ${max} entries` }).meta({ maxProperties: max })

export const ListRecipesInput = z.strictObject({
  namespace: namespace().optional().describe('Namespace to list; all namespaces when omitted.'),
  phase: z.array(z.enum(RECIPE_PHASES)).max(RECIPE_PHASES.length).optional().describe('Only recipes in one of these phases.'),
  kind: z.enum(['all', 'templates', 'instances']).default('all').describe('Templates, instances (everything else) or all.'),
  labelSelector: z.string().max(1024).optional().describe('Kubernetes label selector, e.g. app=shop.'),
  limit: z.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT).describe('Page size.'),
  continue: z.string().max(4096).optional().describe('The continue token of the previous page.'),
})
export type ListRecipesArgs = z.output<typeof ListRecipesInput>

export const GetRecipeInput = z.strictObject({
  namespace: namespace(),
  name: anyName(),
})
export type GetRecipeArgs = z.output<typeof GetRecipeInput>

export const GetRecipeStatusInput = z.strictObject({
  namespace: namespace(),
  name: anyName(),
  history: z.number().int().min(0).max(MAX_HISTORY).default(DEFAULT_HISTORY).describe('How many of the latest phase changes to include.'),
})
export type GetRecipeStatusArgs = z.output<typeof GetRecipeStatusInput>

export const DeleteRecipeInput = z.strictObject({
  namespace: namespace(),
  name: anyName(),
  orphan: z.boolean().default(false).describe('Keep the children (annotation purko.io/orphan) instead of deleting them.'),
})
export type DeleteRecipeArgs = z.output<typeof DeleteRecipeInput>

export const DeployRecipeInput = z.strictObject({
  namespace: namespace(),
  name: z.string().max(RECIPE_NAME_MAX).regex(new RegExp(RECIPE_NAME_PATTERN)),
  template: z.strictObject({
    name: z.string().max(RECIPE_NAME_MAX),
    namespace: z.string().max(63).optional().describe('default: namespace'),
  }).optional().describe('Instantiate this template (a recipe annotated purko.io/template: "true").'),
  spec: z.record(z.string(), z.unknown()).optional().describe('a WorkflowRecipe spec (section 2)'),
  manifest: z.string().max(MAX_MANIFEST_BYTES).optional().describe('One WorkflowRecipe as YAML or JSON.'),
  profile: z.string().max(63).optional().describe('Replaces spec.profile.'),
  values: atMost(z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])), MAX_VALUES).optional()
    .describe('Input values, merged over spec.values.'),
  labels: atMost(z.record(z.string(), z.string().max(63)), MAX_LABELS).optional().describe('Labels of the recipe (no purko.io/ keys).'),
  dryRun: z.boolean().default(false).describe('Validate on the API server (dryRun=All) and write nothing.'),
})
export type DeployRecipeArgs = z.output<typeof DeployRecipeInput>
