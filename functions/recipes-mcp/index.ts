// Serves: POST /mcp, the recipes MCP server (spec §14): MCP Streamable HTTP in stateless mode
// with JSON responses, five tools (list-recipes, get-recipe, deploy-recipe, delete-recipe,
// get-recipe-status). No Trigger: agents and people call it directly.
// Reads: TokenReview and SubjectAccessReview for the caller, WorkflowRecipes (and, for
// deploy-recipe's evaluation, WorkflowRecipePolicies and namespace labels when it may read them).
// Writes: WorkflowRecipes (create, replace, the orphan annotation, delete). Never a Secret.
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Context, Hono } from 'hono'
import { ConflictError, RefusedError, TransientError } from '../../shared/core/errors.js'
import { baseApp } from '../../shared/http/app.js'
import type { AccessAttributes, TokenIdentity } from '../../shared/kube/port.js'
import type { FunctionKube } from './kube-verbs.js'
import type { Logger } from '../../shared/log.js'
import type { RecipeConfig } from '../../shared/recipe/plan/config.js'
import { ANNOTATION_ORPHAN } from '../../shared/recipe/plan/deletion.js'
import type { NamespaceLabels } from '../../shared/recipe/plan/policy.js'
import { deleteAccess, deployAccess, getAccess, listAccess, templateAccess } from '../../shared/recipes-mcp/access.js'
import {
  deploySourceOf, desiredRecipe, instantiateTemplate, phaseAfterDeploy, recipeToWrite, type RecipeBody,
} from '../../shared/recipes-mcp/deploy-request.js'
import { errorResult, forbidden, ToolError, toolErrorOf, toolResult, type ToolResult } from '../../shared/recipes-mcp/errors.js'
import { evaluateDeployment, evaluationNamespaces } from '../../shared/recipes-mcp/evaluation.js'
import type {
  DeleteRecipeArgs, DeployRecipeArgs, GetRecipeArgs, GetRecipeStatusArgs, ListRecipesArgs,
} from '../../shared/recipes-mcp/tool-inputs.js'
import { isToolName, parseArguments, toolDefinitions, type ToolName } from '../../shared/recipes-mcp/tools.js'
import { deletionOrder, matchesListFilters, recipeDetail, recipeStatusView, recipeSummary } from '../../shared/recipes-mcp/views.js'
import type { WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import type { WorkflowRecipePolicy } from '../../shared/schemas/workflowrecipepolicy.js'

export const SERVER_NAME = 'kinetic-recipes'
/** Who every call is with `KINETIC_RECIPES_MCP_AUTH=none` (local development only). */
export const ANONYMOUS: TokenIdentity = { username: 'anonymous' }

export interface RecipesMcpDeps {
  kube: FunctionKube
  log: Logger
  /** spec §1.1 configuration: placement, and `mcpAuth`/`mcpAudience` for the callers. */
  recipes: RecipeConfig
  /** `serverInfo.version` (the package version). */
  version: string
}

/** One tool call: who asks, and where its log lines go. */
interface Call {
  deps: RecipesMcpDeps
  caller: TokenIdentity
  log: Logger
  requestId: string
}

/** The recipes-mcp function: POST /mcp, a fresh MCP server per request, nothing kept between requests. */
export function createApp(deps: RecipesMcpDeps): Hono {
  const app = baseApp(deps.log)
  const tools = toolDefinitions()
  if (deps.recipes.mcpAuth === 'none') {
    deps.log.warn({ auth: 'none' }, 'Caller authentication is off (KINETIC_RECIPES_MCP_AUTH=none, local development only): every call is allowed, as anonymous')
  }
  const notAllowed = (c: Context) => c.body(null, 405, { Allow: 'POST' })
  app.get('/mcp', notAllowed)
  app.delete('/mcp', notAllowed)
  app.post('/mcp', async (c) => {
    const caller = await authenticate(deps, c.req.header('authorization'))
    if (!caller) {
      return c.json({ error: 'Unauthorized', message: 'A valid bearer token is required' }, 401, { 'WWW-Authenticate': 'Bearer' })
    }
    const server = mcpServer(deps, caller, tools)
    // Stateless: no session id is issued or required, and every answer is one JSON body.
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    await server.connect(transport)
    try {
      return await transport.handleRequest(c.req.raw)
    } finally {
      await server.close()
    }
  })
  return app
}

/** TokenReview of the bearer token (with the configured audience); null answers 401. */
async function authenticate(deps: RecipesMcpDeps, header: string | undefined): Promise<TokenIdentity | null> {
  if (deps.recipes.mcpAuth === 'none') return ANONYMOUS
  const token = /^Bearer +([^\s]+) *$/i.exec(header ?? '')?.[1]
  if (!token) return null
  return deps.kube.reviewToken(token, deps.recipes.mcpAudience ? [deps.recipes.mcpAudience] : undefined)
}

function mcpServer(deps: RecipesMcpDeps, caller: TokenIdentity, tools: ReturnType<typeof toolDefinitions>): Server {
  const server = new Server({ name: SERVER_NAME, version: deps.version }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params
    if (!isToolName(name)) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`)
    // Schema violations are a JSON-RPC error (-32602), not a tool result (spec §14.4).
    const parsed = parseArguments(name, request.params.arguments)
    if (!parsed.ok) throw new McpError(ErrorCode.InvalidParams, parsed.message)
    const requestId = String(extra.requestId)
    const log = deps.log.child({ tool: name, user: caller.username, requestId })
    return callTool({ deps, caller, log, requestId }, name, parsed.args)
  })
  return server
}

async function callTool(call: Call, name: ToolName, args: unknown): Promise<ToolResult> {
  const start = performance.now()
  const target = targetOf(args)
  try {
    const structured = await TOOL_HANDLERS[name](call, args as never)
    call.log.info({ ...target, outcome: 'ok', ms: Math.round(performance.now() - start) }, 'Tool call')
    return toolResult(structured)
  } catch (err) {
    const error = toolErrorOf(err, call.requestId)
    const fields = { ...target, outcome: error.code, ms: Math.round(performance.now() - start) }
    if (error.code === 'Internal') call.log.error({ ...fields, err: err instanceof Error ? err.message : String(err), cause: causeOf(err) }, 'Tool call failed unexpectedly')
    else call.log.info({ ...fields, reason: error.message }, 'Tool call refused')
    return errorResult(error)
  }
}

/** What a log line may name about a call: where, never the arguments (values and manifests may be anything). */
function targetOf(args: unknown): { namespace?: string; name?: string } {
  const a = args as { namespace?: unknown; name?: unknown }
  return {
    ...(typeof a.namespace === 'string' ? { namespace: a.namespace } : {}),
    ...(typeof a.name === 'string' ? { name: a.name } : {}),
  }
}

function causeOf(err: unknown): string | undefined {
  const cause = (err as { cause?: unknown }).cause
  return cause instanceof Error ? cause.message : undefined
}

type Handler<A> = (call: Call, args: A) => Promise<Record<string, unknown>>

const TOOL_HANDLERS: { [K in ToolName]: Handler<never> } = {
  'list-recipes': listRecipes as Handler<never>,
  'get-recipe': getRecipe as Handler<never>,
  'deploy-recipe': deployRecipe as Handler<never>,
  'delete-recipe': deleteRecipe as Handler<never>,
  'get-recipe-status': getRecipeStatus as Handler<never>,
}

/** Every SubjectAccessReview must allow, before anything is read or written for the caller; the first denied one is told. */
async function authorize(call: Call, checks: AccessAttributes[]): Promise<void> {
  if (call.deps.recipes.mcpAuth === 'none') return
  const answers = await Promise.all(checks.map((a) => call.deps.kube.reviewAccess(call.caller, a)))
  const denied = checks.find((_, i) => !answers[i])
  if (denied) throw forbidden(call.caller.username, denied)
}

async function listRecipes(call: Call, args: ListRecipesArgs): Promise<Record<string, unknown>> {
  await authorize(call, listAccess(args.namespace))
  const page = await call.deps.kube.listRecipes({
    ...(args.namespace ? { namespace: args.namespace } : {}),
    ...(args.labelSelector ? { labelSelector: args.labelSelector } : {}),
    limit: args.limit,
    ...(args.continue ? { continue: args.continue } : {}),
  }).catch((err: unknown) => {
    // The API server refused the selector or the continue token (expired: start over).
    if (err instanceof RefusedError) throw new ToolError('InvalidArguments', err.message, undefined, { cause: err })
    throw err
  })
  // phase and kind are filtered within the page, so a page may hold fewer than `limit` items.
  const items = page.items.filter((r) => matchesListFilters(r, args)).map(recipeSummary)
  return { items, ...(page.continue ? { continue: page.continue } : {}) }
}

async function readRecipe(call: Call, namespace: string, name: string): Promise<WorkflowRecipe> {
  const recipe = await call.deps.kube.getRecipe(namespace, name)
  if (!recipe) throw new ToolError('NotFound', `WorkflowRecipe ${namespace}/${name} not found`)
  return recipe
}

async function getRecipe(call: Call, args: GetRecipeArgs): Promise<Record<string, unknown>> {
  await authorize(call, getAccess(args.namespace, args.name))
  return recipeDetail(await readRecipe(call, args.namespace, args.name))
}

async function getRecipeStatus(call: Call, args: GetRecipeStatusArgs): Promise<Record<string, unknown>> {
  await authorize(call, getAccess(args.namespace, args.name))
  return recipeStatusView(await readRecipe(call, args.namespace, args.name), args.history)
}

async function deployRecipe(call: Call, args: DeployRecipeArgs): Promise<Record<string, unknown>> {
  const { kube } = call.deps
  const source = deploySourceOf(args)
  let body: RecipeBody
  if (source.kind === 'template') {
    await authorize(call, templateAccess(source.namespace, source.name))
    const template = await kube.getRecipe(source.namespace, source.name)
    if (!template) throw new ToolError('NotFound', `Template ${source.namespace}/${source.name} not found`)
    body = instantiateTemplate(template)
  } else {
    body = source.body
  }
  const desired = desiredRecipe(args, body, call.caller.username)
  const dryRun = args.dryRun

  // A lost resourceVersion race (or a create that met a recipe created meanwhile) is retried once.
  const authorized = new Set<string>()
  let outcome: { existing: WorkflowRecipe | null; written: WorkflowRecipe } | undefined
  let lastConflict: ConflictError | undefined
  for (let attempt = 0; attempt < 2 && !outcome; attempt++) {
    const existing = await kube.getRecipe(args.namespace, args.name)
    const verb = existing ? 'update' : 'create'
    if (!authorized.has(verb)) {
      await authorize(call, deployAccess(args.namespace, args.name, existing !== null, desired.spec))
      authorized.add(verb)
    }
    const toWrite = recipeToWrite(desired, existing)
    try {
      if (existing) {
        outcome = { existing, written: await kube.replaceRecipe(toWrite, { dryRun }) }
      } else {
        const created = await kube.createRecipe(toWrite, { dryRun })
        if (created === 'exists') lastConflict = new ConflictError(`WorkflowRecipe ${args.namespace}/${args.name} was created by someone else meanwhile`)
        else outcome = { existing: null, written: created }
      }
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err
      lastConflict = err
    }
  }
  if (!outcome) throw lastConflict ?? new ConflictError(`WorkflowRecipe ${args.namespace}/${args.name} kept changing`)

  const { existing, written } = outcome
  const { policies, labels, unread } = await policyContext(call, args.namespace)
  const evaluation = evaluateDeployment(written, call.deps.recipes, policies, labels)
  // Say what the evaluation could not see, rather than a silent "compliant"; the controller sees it all.
  if (unread.length > 0) evaluation.policy = { ...evaluation.policy, unavailable: `recipes-mcp could not read ${unread.join(' or ')}; the controller evaluates them` }
  return {
    namespace: args.namespace,
    name: args.name,
    created: existing === null,
    updated: existing !== null,
    dryRun,
    generation: written.metadata.generation ?? null,
    phase: phaseAfterDeploy(existing, written),
    ...evaluation,
  }
}

/**
 * The policies and namespace labels deploy-recipe's evaluation reads. spec §14.2 gives the
 * function's ServiceAccount no access to them; where it has none (or they cannot be read),
 * the evaluation runs without them and `policy.evaluated` says which policies it saw.
 */
async function policyContext(call: Call, namespace: string): Promise<{ policies: WorkflowRecipePolicy[]; labels: NamespaceLabels; unread: string[] }> {
  const { kube } = call.deps
  const unread: string[] = []
  let policies: WorkflowRecipePolicy[] = []
  try {
    policies = await kube.listRecipePolicies()
  } catch (err) {
    unread.push('WorkflowRecipePolicies')
    call.log.warn({ err: err instanceof Error ? err.message : String(err), transient: err instanceof TransientError }, 'WorkflowRecipePolicies could not be read; deploy-recipe evaluates without them')
  }
  const labels: Record<string, Record<string, string> | undefined> = {}
  for (const ns of evaluationNamespaces(namespace, call.deps.recipes)) {
    try {
      labels[ns] = (await kube.getNamespace(ns))?.metadata?.labels
    } catch {
      if (!unread.includes('namespace labels')) unread.push('namespace labels')
    }
  }
  return { policies, labels, unread }
}

async function deleteRecipe(call: Call, args: DeleteRecipeArgs): Promise<Record<string, unknown>> {
  const { kube } = call.deps
  await authorize(call, deleteAccess(args.namespace, args.name, args.orphan))
  const absent = { namespace: args.namespace, name: args.name, found: false, deleted: false, orphaned: false, deletionOrder: [] }
  let recipe = await kube.getRecipe(args.namespace, args.name)
  if (!recipe) return absent
  if (args.orphan && recipe.metadata.annotations?.[ANNOTATION_ORPHAN] !== 'true') {
    const patched = await markOrphan(call, recipe)
    if (!patched) return absent
    recipe = patched
  }
  const deleted = await kube.deleteRecipe(args.namespace, args.name)
  if (!deleted) return absent
  const orphaned = args.orphan || recipe.spec.deletionPolicy === 'Orphan'
  return { namespace: args.namespace, name: args.name, found: true, deleted, orphaned, deletionOrder: orphaned ? [] : deletionOrder(recipe) }
}

/** `purko.io/orphan: "true"` before the delete, so the finalizer keeps every child; one retry on a lost race; null when the recipe went meanwhile. */
async function markOrphan(call: Call, recipe: WorkflowRecipe): Promise<WorkflowRecipe | null> {
  const { kube } = call.deps
  const namespace = recipe.metadata.namespace ?? ''
  const name = recipe.metadata.name ?? ''
  let current: WorkflowRecipe | null = recipe
  for (let attempt = 0; ; attempt++) {
    try {
      return await kube.patchRecipeMetadata(namespace, name, current.metadata.resourceVersion ?? '', { annotations: { [ANNOTATION_ORPHAN]: 'true' } })
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt > 0) throw err
      current = await kube.getRecipe(namespace, name)
      if (!current) return null
    }
  }
}
