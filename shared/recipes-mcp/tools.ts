/**
 * The five tools of the recipes MCP server as `tools/list` shows them (spec §14.3): name,
 * description, annotations and the JSON Schema converted from the zod input schema by the SDK's
 * own converter (the one McpServer uses). Pure.
 */
import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js'
import type { z } from 'zod'
import {
  DeleteRecipeInput, DeployRecipeInput, GetRecipeInput, GetRecipeStatusInput, ListRecipesInput,
} from './tool-inputs.js'

export const TOOL_NAMES = ['list-recipes', 'get-recipe', 'deploy-recipe', 'delete-recipe', 'get-recipe-status'] as const
export type ToolName = (typeof TOOL_NAMES)[number]

export interface ToolAnnotations {
  title: string
  readOnlyHint: boolean
  destructiveHint: boolean
  idempotentHint: boolean
  openWorldHint: boolean
}

interface ToolSpec {
  description: string
  input: z.ZodType
  annotations: ToolAnnotations
}

const readOnly = (title: string): ToolAnnotations => ({ title, readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false })

export const TOOLS: Record<ToolName, ToolSpec> = {
  'list-recipes': {
    description: 'List WorkflowRecipes (templates and instances) with their phase, version, revision, ready workloads and MCP endpoints; one page at a time (pass `continue` for the next).',
    input: ListRecipesInput,
    annotations: readOnly('List recipes'),
  },
  'get-recipe': {
    description: "One WorkflowRecipe's spec, declared inputs (type, required, default) and profiles: what deploy-recipe needs to instantiate it.",
    input: GetRecipeInput,
    annotations: readOnly('Get a recipe'),
  },
  'deploy-recipe': {
    description: 'Create or update a WorkflowRecipe from a template, a spec or a manifest (exactly one), with optional profile, values and labels. '
      + 'Reports whether the spec is valid, what the policies say, whether a human must approve it (and the command) and the objects it will create. '
      + 'Only recipes deployed through this tool can be updated by it. `dryRun` validates on the API server and writes nothing.',
    input: DeployRecipeInput,
    annotations: { title: 'Deploy a recipe', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  'delete-recipe': {
    description: 'Delete a WorkflowRecipe: Kinetic removes its workloads in reverse dependency order (`orphan` keeps them). Deleting an absent recipe succeeds with found: false.',
    input: DeleteRecipeInput,
    annotations: { title: 'Delete a recipe', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  },
  'get-recipe-status': {
    description: "A WorkflowRecipe's lifecycle: phase, conditions, approval (and the command a person runs to approve), policy findings, workloads, tests, the child workflow, MCP servers and the latest phase changes.",
    input: GetRecipeStatusInput,
    annotations: readOnly('Get the status of a recipe'),
  },
}

export function isToolName(name: string): name is ToolName {
  return (TOOL_NAMES as readonly string[]).includes(name)
}

/** A tool as `tools/list` shows it. */
export interface ToolDefinition {
  name: ToolName
  title: string
  description: string
  inputSchema: { type: 'object'; [key: string]: unknown }
  annotations: ToolAnnotations
}

/** Pure: the `tools/list` result, in the spec's order. */
export function toolDefinitions(): ToolDefinition[] {
  return TOOL_NAMES.map((name) => {
    const tool = TOOLS[name]
    const { $schema: _dialect, ...schema } = toJsonSchemaCompat(tool.input as never, { pipeStrategy: 'input' }) as Record<string, unknown>
    return {
      name,
      title: tool.annotations.title,
      description: tool.description,
      inputSchema: { ...schema, type: 'object' },
      annotations: tool.annotations,
    }
  })
}

/** A call's arguments against the tool's schema; `message` names the first offending field. */
export type ParsedArguments = { ok: true; args: unknown } | { ok: false; message: string }

/** Pure: validates the arguments of a call (absent arguments are `{}`). */
export function parseArguments(name: ToolName, args: unknown): ParsedArguments {
  const result = TOOLS[name].input.safeParse(args ?? {})
  if (result.success) return { ok: true, args: result.data }
  const issue = result.error.issues[0]
  const path = issue?.path.map(String).join('.') ?? ''
  return { ok: false, message: `Invalid arguments for tool ${name}: ${path ? `${path}: ` : ''}${issue?.message ?? 'invalid'}` }
}
