/**
 * `renderRecipe`: contract §1 steps 1-5 in pipeline order — inputs (§2.2), computed values
 * (§2.3), includeWhen (§3.2), the dependency graph (§7.11, §8.2) and templates (§4) — plus the
 * §8.2 checks that need no cluster state (DuplicateEnvName, VolumeMountConflict). Pure: the
 * same recipe and configuration always give the same result; no clock, no randomness.
 */
import type { RecipeStep, RecipeTest, Resources, WorkflowRecipe, Workload } from '../schemas/workflowrecipe.js'
import { toPlain, type TypedValue } from './cel.js'
import { evaluateComputed, type RecipeIdentity } from './computed.js'
import { sandboxNamespaceOf, workloadNamespaceOf, type RecipeConfig } from './config.js'
import { checkGraph, topologicalOrder } from './graph.js'
import { evaluateInclusion } from './include.js'
import { resolveInputs } from './inputs.js'
import { baseName } from './names.js'
import type { RenderedStep, RenderedTest, RenderedWorkflow, RenderedWorkload, RenderResult, ResolvedValue, SpecError } from './rendered.js'
import { parseTemplate, renderField, replicasOf, type FieldCheck, type TemplateContext, type WorkloadRef } from './template.js'

/** Port of the bridge of a stdio MCP workload when `mcp.port` is unset (§2.11). */
export const DEFAULT_STDIO_MCP_PORT = 8000
export const DEFAULT_MCP_PATH = '/mcp'
/** Most errors joined into the `SpecValid` message (§8.2). */
export const MAX_LISTED_ERRORS = 10

/** Pure: the §8.2 `SpecValid` message: errors joined by `; `, at most 10, then `; and <n> more`. */
export function specErrorsMessage(errors: readonly SpecError[]): string {
  const listed = errors.slice(0, MAX_LISTED_ERRORS).map((e) => e.message).join('; ')
  return errors.length > MAX_LISTED_ERRORS ? `${listed}; and ${errors.length - MAX_LISTED_ERRORS} more` : listed
}

/** Pure: what templates know about each declared workload (§4.2). */
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

/** One templatable field: where it is, its template, its check, and where the result goes. */
interface Slot {
  field: string
  path: string
  template: string
  check?: FieldCheck
  assign: (text: string, outcome: { value: TypedValue | null }) => void
}

function resourceSlots(resources: Resources | undefined, prefix: string, out: Slot[]): Resources | undefined {
  if (!resources) return undefined
  const copy: Resources = {}
  for (const group of ['requests', 'limits'] as const) {
    const values = resources[group]
    if (!values) continue
    const target: Record<string, string> = {}
    copy[group] = target
    for (const [name, template] of Object.entries(values)) {
      if (template === undefined) continue
      target[name] = template
      out.push({ field: `resources.${group}.${name}`, path: `${prefix}.resources.${group}.${name}`, template, check: 'quantity', assign: (t) => { target[name] = t } })
    }
  }
  return copy
}

function containerSlots<T extends { image: string; command?: string[] | undefined; args?: string[] | undefined; env?: Array<{ name: string; value: string }> | undefined; resources?: Resources | undefined }>(
  source: T, prefix: string, out: Slot[],
): T {
  const copy: T = { ...source }
  out.push({ field: 'image', path: `${prefix}.image`, template: source.image, check: 'image', assign: (t) => { copy.image = t } })
  for (const list of ['command', 'args'] as const) {
    const items = source[list]
    if (!items) continue
    const rendered = [...items]
    copy[list] = rendered
    items.forEach((template, i) => {
      out.push({ field: `${list}[${i}]`, path: `${prefix}.${list}[${i}]`, template, assign: (t) => { rendered[i] = t } })
    })
  }
  if (source.env) {
    const env = source.env.map((e) => ({ ...e }))
    copy.env = env
    env.forEach((e) => {
      out.push({ field: `env[${e.name}]`, path: `${prefix}.env[${e.name}].value`, template: e.value, assign: (t) => { e.value = t } })
    })
  }
  const resources = resourceSlots(source.resources, prefix, out)
  if (resources) copy.resources = resources
  return copy
}

function workloadSlots(w: Workload, out: Slot[]): Omit<Workload, 'replicas'> & { replicas?: number } {
  const prefix = `spec.workloads[${w.name}]`
  const replicas = w.replicas
  const copy = containerSlots(w, prefix, out) as Omit<Workload, 'replicas'> & { replicas?: number }
  delete copy.replicas
  if (typeof replicas === 'number') copy.replicas = replicas
  else if (typeof replicas === 'string') {
    out.push({
      field: 'replicas', path: `${prefix}.replicas`, template: replicas, check: 'replicas',
      assign: (t, o) => { copy.replicas = replicasOf(t, o.value) ?? 0 },
    })
  }
  if (w.schedule !== undefined) {
    out.push({ field: 'schedule', path: `${prefix}.schedule`, template: w.schedule, check: 'cron', assign: (t) => { copy.schedule = t } })
  }
  if (w.volumeClaimTemplates) {
    const claims = w.volumeClaimTemplates.map((c) => ({ ...c }))
    copy.volumeClaimTemplates = claims
    for (const c of claims) {
      out.push({ field: `volumeClaimTemplates[${c.name}].storage`, path: `${prefix}.volumeClaimTemplates[${c.name}].storage`, template: c.storage, check: 'quantity', assign: (t) => { c.storage = t } })
    }
  }
  return copy
}

function inputSlots(value: unknown, field: string, path: string, out: Slot[], set: (v: unknown) => void): unknown {
  if (typeof value === 'string') {
    out.push({ field, path, template: value, assign: (t) => set(t) })
    return value
  }
  if (Array.isArray(value)) {
    const copy = [...value]
    value.forEach((item, i) => { copy[i] = inputSlots(item, `${field}[${i}]`, `${path}[${i}]`, out, (v) => { copy[i] = v }) })
    return copy
  }
  if (typeof value === 'object' && value !== null) {
    const copy: Record<string, unknown> = {}
    for (const [k, item] of Object.entries(value)) {
      copy[k] = inputSlots(item, `${field}.${k}`, `${path}.${k}`, out, (v) => { copy[k] = v })
    }
    return copy
  }
  return value
}

function stepSlots(s: RecipeStep, out: Slot[]): RenderedStep {
  const copy: RenderedStep = { ...s }
  const prefix = `spec.steps[${s.name}]`
  if (s.task !== undefined) out.push({ field: 'task', path: `${prefix}.task`, template: s.task, assign: (t) => { copy.task = t } })
  if (s.input !== undefined) {
    copy.input = inputSlots(s.input, 'input', `${prefix}.input`, out, (v) => { copy.input = v as Record<string, unknown> }) as Record<string, unknown>
  }
  return copy
}

/** Renders every slot of one owner, collecting errors. */
function renderSlots(slots: Slot[], owner: string, ctx: TemplateContext, errors: SpecError[]): void {
  for (const slot of slots) {
    const outcome = renderField(slot.template, owner, slot.field, ctx, slot.check, slot.path)
    if (outcome.ok) slot.assign(outcome.text, outcome)
    else errors.push(...outcome.errors)
  }
}

/** Only the grammar (§4.1) for the fields of excluded workloads, so a profile never hides a typo in a placeholder. */
function checkSyntax(slots: Slot[], owner: string, errors: SpecError[]): void {
  for (const slot of slots) {
    const parsed = parseTemplate(slot.template)
    if (!parsed.ok) {
      errors.push({ reason: 'TemplateSyntaxError', message: `${owner}: ${slot.field}: malformed placeholder at offset ${parsed.offset}`, field: slot.path })
    }
  }
}

function envChecks(owner: string, prefix: string, c: { env?: Array<{ name: string }> | undefined; envSecret?: Array<{ name: string }> | undefined }, errors: SpecError[]): void {
  const plain = new Set((c.env ?? []).map((e) => e.name))
  for (const s of c.envSecret ?? []) {
    if (plain.has(s.name)) {
      errors.push({ reason: 'DuplicateEnvName', message: `${owner}: environment variable "${s.name}" is set by both env and envSecret`, field: `${prefix}.envSecret[${s.name}]` })
    }
  }
}

function volumeChecks(w: Workload, errors: SpecError[]): void {
  for (const claim of w.volumeClaimTemplates ?? []) {
    const volume = (w.volumes ?? []).find((v) => v.name === claim.name)
    if (volume && claim.mountPath !== undefined && claim.mountPath !== volume.mountPath) {
      errors.push({
        reason: 'VolumeMountConflict',
        message: `workload "${w.name}": volume "${claim.name}" and volumeClaimTemplate "${claim.name}" have different mountPaths`,
        field: `spec.workloads[${w.name}].volumeClaimTemplates[${claim.name}].mountPath`,
      })
    }
  }
}

/** The annotation that makes a recipe a template (§2, §7.7). */
export const TEMPLATE_ANNOTATION = 'purko.io/template'

/** Pure: whether the recipe is a template (annotation `purko.io/template: "true"`). */
export function isTemplate(recipe: WorkflowRecipe): boolean {
  return recipe.metadata.annotations?.[TEMPLATE_ANNOTATION] === 'true'
}

/**
 * Pure: contract §1 steps 1-5 for one recipe generation. For a template (§7.7) a required input
 * without a value is not an error: it is listed in `missingInputs` and the placeholders that
 * need it (directly or through a computed value) are left unrendered. for one recipe generation. */
export function renderRecipe(recipe: WorkflowRecipe, config: RecipeConfig): RenderResult {
  const spec = recipe.spec
  const identity: RecipeIdentity = {
    name: recipe.metadata.name ?? '',
    namespace: recipe.metadata.namespace ?? 'default',
    profile: spec.profile ?? '',
  }
  const errors: SpecError[] = []
  const template = isTemplate(recipe)

  // 1. Inputs (a template may leave required inputs without a value, §7.7).
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
  // Cross-field checks of §8.2 that need no cluster state.
  for (const w of workloads) {
    envChecks(`workload "${w.name}"`, `spec.workloads[${w.name}]`, w, errors)
    volumeChecks(w, errors)
  }
  for (const t of spec.tests ?? []) envChecks(`test "${t.name}"`, `spec.tests[${t.name}]`, t, errors)

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
  const rendered = new Map<string, RenderedWorkload>()
  for (const w of workloads) {
    const slots: Slot[] = []
    const copy = workloadSlots(w, slots)
    const owner = `workload "${w.name}"`
    if (!included.has(w.name)) { checkSyntax(slots, owner, errors); continue }
    renderSlots(slots, owner, ctx, errors)
    const ref = ctx.workloads.get(w.name)!
    rendered.set(w.name, { ...copy, namespace: ref.namespace, base: ref.name })
  }
  const sandbox = sandboxNamespaceOf(config, identity.namespace)
  const tests: RenderedTest[] = (spec.tests ?? []).map((t: RecipeTest) => {
    const slots: Slot[] = []
    const copy = containerSlots(t, `spec.tests[${t.name}]`, slots)
    renderSlots(slots, `test "${t.name}"`, ctx, errors)
    return { ...copy, namespace: sandbox }
  })
  let renderedSteps: RenderedStep[] | undefined
  let workflow: RenderedWorkflow | undefined
  if (steps.length > 0) {
    renderedSteps = steps.map((s) => {
      const slots: Slot[] = []
      const copy = stepSlots(s, slots)
      renderSlots(slots, `step "${s.name}"`, ctx, errors)
      return copy
    })
    const settings = spec.workflow ?? { parallelism: 1, failureStrategy: 'failFast' as const, timeout: '30m' }
    workflow = { ...settings }
    if (settings.parameters) {
      const parameters: Record<string, string> = { ...settings.parameters }
      workflow.parameters = parameters
      const slots: Slot[] = Object.entries(settings.parameters).map(([key, template]) => ({
        field: `parameters[${key}]`, path: `spec.workflow.parameters.${key}`, template, assign: (t: string) => { parameters[key] = t },
      }))
      renderSlots(slots, 'workflow', ctx, errors)
    }
  }

  if (errors.length > 0) return { ok: false, errors }
  const plain = (m: Map<string, TypedValue>): Record<string, ResolvedValue> =>
    Object.fromEntries([...m].map(([k, v]) => [k, toPlain(v)]))
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
