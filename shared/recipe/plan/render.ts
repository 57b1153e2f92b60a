/**
 * `renderRecipe`: spec §1 steps 1-5 in pipeline order — inputs (§2.2), computed values
 * (spec §2.3), includeWhen (§3.2), the dependency graph (§7.11, §8.2) and templates (§4) — plus the
 * spec §8.2 checks that need no cluster state (DuplicateEnvName, VolumeMountConflict).
 * `{{workloads.<w>.name}}` of a Job workload is its object's name `base(w)-<h8>` (spec §5.2,
 * `jobNameOf` of manifests.ts over the rendered Job); job-names.ts orders Jobs that reference
 * Job names, and template-fields.ts finds the fields templates live in. Pure: the same recipe and configuration always give the same result; no clock,
 * no randomness.
 */
import type { RecipeTest, WorkflowRecipe, Workload } from '../../schemas/workflowrecipe.js'
import { toPlain, type TypedValue } from './cel.js'
import { evaluateComputed, type RecipeIdentity } from './computed.js'
import { sandboxNamespaceOf, workloadNamespaceOf, type RecipeConfig } from './config.js'
import { checkGraph, topologicalOrder } from './graph.js'
import { evaluateInclusion } from './include.js'
import { resolveInputs } from './inputs.js'
import { isNamedByContent, jobNamePlan } from './job-names.js'
import { recipeRefOf, jobNameOf } from './manifests.js'
import { baseName } from './names.js'
import type { RenderedStep, RenderedTest, RenderedWorkflow, RenderedWorkload, RenderResult, ResolvedValue, SpecError } from './rendered.js'
import { checkSyntax, containerSlots, renderSlots, stepSlots, workloadSlots, type Slot } from './template-fields.js'
import type { TemplateContext, WorkloadRef } from './template.js'

/** Port of the bridge of a stdio MCP workload when `mcp.port` is unset (spec §2.11). */
export const DEFAULT_STDIO_MCP_PORT = 8000
export const DEFAULT_MCP_PATH = '/mcp'
/** Most errors joined into the `SpecValid` message (spec §8.2). */
export const MAX_LISTED_ERRORS = 10

/** Pure: the spec §8.2 `SpecValid` message: errors joined by `; `, at most 10, then `; and <n> more`. */
export function specErrorsMessage(errors: readonly SpecError[]): string {
  const listed = errors.slice(0, MAX_LISTED_ERRORS).map((e) => e.message).join('; ')
  return errors.length > MAX_LISTED_ERRORS ? `${listed}; and ${errors.length - MAX_LISTED_ERRORS} more` : listed
}

/** Pure: what templates know about each declared workload (spec §4.2). */
export function workloadRefs(recipe: WorkflowRecipe, config: RecipeConfig, included: ReadonlySet<string>): Map<string, WorkloadRef> {
  const recipeNamespace = recipe.metadata.namespace ?? 'default'
  const recipeName = recipe.metadata.name ?? ''
  const refs = new Map<string, WorkloadRef>()
  for (const w of recipe.spec.workloads ?? []) {
    const base = baseName(recipeNamespace, recipeName, w.name)
    const namespace = workloadNamespaceOf(config, recipeNamespace, w)
    const ports = (w.ports ?? []).map((p) => ({ name: p.name, port: p.port }))
    const ref: WorkloadRef = { included: included.has(w.name), name: base, namespace, ports: w.transport === 'stdio' ? [] : ports }
    if (w.transport === 'stdio') {
      ref.serviceName = base
      ref.port = w.mcp?.port ?? DEFAULT_STDIO_MCP_PORT
      ref.mcpUrl = `http://${base}.${namespace}.svc:${ref.port}${DEFAULT_MCP_PATH}`
    } else if (ports.length > 0) {
      ref.serviceName = base
      ref.port = ports[0]!.port
      if (w.transport === 'http') {
        ref.mcpUrl = `http://${base}.${namespace}.svc:${w.mcp?.port ?? ports[0]!.port}${w.mcp?.path ?? DEFAULT_MCP_PATH}`
      }
    }
    refs.set(w.name, ref)
  }
  return refs
}

/** DuplicateEnvName (spec §8.2): a variable set by both env and envSecret. */
function envChecks(owner: string, prefix: string, container: { env?: Array<{ name: string }> | undefined; envSecret?: Array<{ name: string }> | undefined }, errors: SpecError[]): void {
  const plain = new Set((container.env ?? []).map((variable) => variable.name))
  for (const secret of container.envSecret ?? []) {
    if (plain.has(secret.name)) {
      errors.push({ reason: 'DuplicateEnvName', message: `${owner}: environment variable "${secret.name}" is set by both env and envSecret`, field: `${prefix}.envSecret[${secret.name}]` })
    }
  }
}

/** VolumeMountConflict (spec §8.2): a volume and a volumeClaimTemplate of one name mounted at different paths. */
function volumeChecks(workload: Workload, errors: SpecError[]): void {
  for (const claim of workload.volumeClaimTemplates ?? []) {
    const volume = (workload.volumes ?? []).find((candidate) => candidate.name === claim.name)
    if (volume && claim.mountPath !== undefined && claim.mountPath !== volume.mountPath) {
      errors.push({
        reason: 'VolumeMountConflict',
        message: `workload "${workload.name}": volume "${claim.name}" and volumeClaimTemplate "${claim.name}" have different mountPaths`,
        field: `spec.workloads[${workload.name}].volumeClaimTemplates[${claim.name}].mountPath`,
      })
    }
  }
}

/** The annotation that makes a recipe a template (spec §2, §7.7). */
export const TEMPLATE_ANNOTATION = 'purko.io/template'

/** Pure: whether the recipe is a template (annotation `purko.io/template: "true"`). */
export function isTemplate(recipe: WorkflowRecipe): boolean {
  return recipe.metadata.annotations?.[TEMPLATE_ANNOTATION] === 'true'
}

/**
 * Pure: spec §1 steps 1-5 for one recipe generation. For a template (§7.7) a required input
 * without a value is not an error: it is listed in `missingInputs` and the placeholders that
 * need it (directly or through a computed value) are left unrendered.
 */
export function renderRecipe(recipe: WorkflowRecipe, config: RecipeConfig): RenderResult {
  const spec = recipe.spec
  const identity: RecipeIdentity = {
    name: recipe.metadata.name ?? '',
    namespace: recipe.metadata.namespace ?? 'default',
    profile: spec.profile ?? '',
  }
  const errors: SpecError[] = []
  const template = isTemplate(recipe)

  // 1. Inputs (a template may leave required inputs without a value, spec §7.7).
  const inputs = resolveInputs(spec, { template })
  errors.push(...inputs.errors)
  // 2. Computed values.
  const computed = evaluateComputed(spec, inputs.values, inputs.failed, identity)
  errors.push(...computed.errors)
  // 3. Inclusion.
  const workloads = spec.workloads ?? []
  const inclusion = evaluateInclusion(workloads, inputs.values, computed.values, { inputs: inputs.failed, computed: computed.failed }, identity)
  errors.push(...inclusion.errors)
  const included = new Set(inclusion.included)
  // 4. Graph: every declared workload (and step), then the order of the included ones.
  errors.push(...checkGraph(workloads, 'workload'))
  const steps = spec.steps ?? []
  errors.push(...checkGraph(steps, 'step'))
  const order = topologicalOrder(workloads, included)
  // Cross-field checks of spec §8.2 that need no cluster state.
  for (const workload of workloads) {
    envChecks(`workload "${workload.name}"`, `spec.workloads[${workload.name}]`, workload, errors)
    volumeChecks(workload, errors)
  }
  for (const test of spec.tests ?? []) envChecks(`test "${test.name}"`, `spec.tests[${test.name}]`, test, errors)

  // 5. Templates.
  const ctx: TemplateContext = {
    inputs: inputs.values,
    failedInputs: inputs.failed,
    computed: computed.values,
    failedComputed: computed.failed,
    recipe: identity,
    workloads: workloadRefs(recipe, config, included),
    leaveUnresolved: template,
  }
  // Workloads: included Job workloads first, in the order their names need (jobNamePlan), then
  // the others; errors are kept per workload and collected in spec order.
  const recipeRef = recipeRefOf(recipe)
  const prepared = workloads.map((workload) => {
    const slots: Slot[] = []
    const copy = workloadSlots(workload, slots)
    return { workload, slots, copy, owner: `workload "${workload.name}"`, errors: [] as SpecError[] }
  })
  const byName = new Map(prepared.map((entry) => [entry.workload.name, entry]))
  const rendered = new Map<string, RenderedWorkload>()
  const plan = jobNamePlan(prepared.filter((entry) => included.has(entry.workload.name) && isNamedByContent(entry.workload)))
  // Until a Job is rendered its name is unknown (a failure reported elsewhere, if ever read).
  for (const name of [...plan.order, ...plan.blocked]) ctx.workloads.get(name)!.nameUnresolved = null
  const resolvable = new Set(plan.order)
  const renderWorkload = (entry: (typeof prepared)[number]): void => {
    const name = entry.workload.name
    for (const [target, why] of plan.cycleWhys(name)) ctx.workloads.get(target)!.nameUnresolved = why
    const all = renderSlots(entry.slots, entry.owner, ctx, entry.errors)
    const ref = ctx.workloads.get(name)!
    const out: RenderedWorkload = { ...entry.copy, namespace: ref.namespace, base: baseName(identity.namespace, identity.name, name) }
    rendered.set(name, out)
    if (resolvable.has(name) && all) { ref.name = jobNameOf(recipeRef, out); delete ref.nameUnresolved }
  }
  for (const name of [...plan.order, ...plan.blocked, ...plan.cyclic]) renderWorkload(byName.get(name)!)
  for (const entry of prepared) {
    if (!included.has(entry.workload.name)) checkSyntax(entry.slots, entry.owner, entry.errors)
    else if (!rendered.has(entry.workload.name)) renderWorkload(entry)
  }
  for (const entry of prepared) errors.push(...entry.errors)
  // Tests, steps and workflow parameters see each cyclic Job through its own cycle.
  for (const [target, why] of plan.cycleWhys('')) ctx.workloads.get(target)!.nameUnresolved = why
  const sandbox = sandboxNamespaceOf(config, identity.namespace)
  const tests: RenderedTest[] = (spec.tests ?? []).map((test: RecipeTest) => {
    const slots: Slot[] = []
    const copy = containerSlots(test, `spec.tests[${test.name}]`, slots)
    renderSlots(slots, `test "${test.name}"`, ctx, errors)
    return { ...copy, namespace: sandbox }
  })
  let renderedSteps: RenderedStep[] | undefined
  let workflow: RenderedWorkflow | undefined
  if (steps.length > 0) {
    renderedSteps = steps.map((step) => {
      const slots: Slot[] = []
      const copy = stepSlots(step, slots)
      renderSlots(slots, `step "${step.name}"`, ctx, errors)
      return copy
    })
    const settings = spec.workflow ?? { parallelism: 1, failureStrategy: 'failFast' as const, timeout: '30m' }
    workflow = { ...settings }
    if (settings.parameters) {
      const parameters: Record<string, string> = { ...settings.parameters }
      workflow.parameters = parameters
      const slots: Slot[] = Object.entries(settings.parameters).map(([key, template]) => ({
        field: `parameters[${key}]`, path: `spec.workflow.parameters.${key}`, template, assign: (text: string) => { parameters[key] = text },
      }))
      renderSlots(slots, 'workflow', ctx, errors)
    }
  }

  if (errors.length > 0) return { ok: false, errors }
  const plain = (values: Map<string, TypedValue>): Record<string, ResolvedValue> =>
    Object.fromEntries([...values].map(([name, value]) => [name, toPlain(value)]))
  const result: RenderResult = {
    ok: true,
    inputs: plain(inputs.values),
    computed: plain(computed.values),
    profile: identity.profile,
    workloads: order.map((name) => rendered.get(name)!),
    excluded: inclusion.excluded,
    order,
    tests,
  }
  if (template) result.missingInputs = [...inputs.missing]
  if (renderedSteps) result.steps = renderedSteps
  if (workflow) result.workflow = workflow
  return result
}
