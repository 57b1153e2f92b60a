/**
 * `renderRecipe`: spec §1 steps 1-5 in pipeline order — inputs (§2.2), computed values
 * (spec §2.3), includeWhen (§3.2), the dependency graph (§7.11, §8.2) and templates (§4) — plus the
 * spec §8.2 checks that need no cluster state (DuplicateEnvName, VolumeMountConflict).
 * `{{workloads.<w>.name}}` of a Job workload is its object's name `base(w)-<h8>` (spec §5.2,
 * `jobNameOf` of manifests.ts over the rendered Job); see `jobNamePlan` for Jobs that reference
 * Job names. Pure: the same recipe and configuration always give the same result; no clock,
 * no randomness.
 */
import type { RecipeStep, RecipeTest, Resources, WorkflowRecipe, Workload } from '../../schemas/workflowrecipe.js'
import { toPlain, type TypedValue } from './cel.js'
import { evaluateComputed, type RecipeIdentity } from './computed.js'
import { sandboxNamespaceOf, workloadNamespaceOf, type RecipeConfig } from './config.js'
import { checkGraph, topologicalOrder } from './graph.js'
import { evaluateInclusion } from './include.js'
import { resolveInputs } from './inputs.js'
import { recipeRefOf, jobNameOf } from './manifests.js'
import { baseName } from './names.js'
import type { RenderedStep, RenderedTest, RenderedWorkflow, RenderedWorkload, RenderResult, ResolvedValue, SpecError } from './rendered.js'
import { parseTemplate, renderField, replicasOf, type FieldCheck, type TemplateContext, type WorkloadRef } from './template.js'

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

/** Renders every slot of one owner, collecting errors; whether every slot rendered (silent failures included). */
function renderSlots(slots: Slot[], owner: string, ctx: TemplateContext, errors: SpecError[]): boolean {
  let all = true
  for (const slot of slots) {
    const outcome = renderField(slot.template, owner, slot.field, ctx, slot.check, slot.path)
    if (outcome.ok) slot.assign(outcome.text, outcome)
    else { errors.push(...outcome.errors); all = false }
  }
  return all
}

/** Only the grammar (spec §4.1) for the fields of excluded workloads, so a profile never hides a typo in a placeholder. */
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

/** Whether the workload's main object is named by its content (spec §5.2: a Job workload, `base(w)-<h8>`). */
function isNamedByContent(w: Workload): boolean {
  return w.kind === 'Job' && w.transport !== 'stdio'
}

/** The workloads whose `.name` a set of slots references. */
function nameReferences(slots: readonly Slot[]): Set<string> {
  const names = new Set<string>()
  for (const slot of slots) {
    const parsed = parseTemplate(slot.template)
    if (!parsed.ok) continue
    for (const segment of parsed.segments) {
      const m = segment.kind === 'ref' ? /^workloads\.([^.]+)\.name$/.exec(segment.ref) : null
      if (m) names.add(m[1]!)
    }
  }
  return names
}

const JOB_NAME_HASH = "a Job's name hashes its rendered spec"

/**
 * The order in which Job workloads get their names (spec §5.2, §4.2). A Job's name is
 * `base(w)-<h8>` over its rendered Job spec, so `{{workloads.<job>.name}}` inside a Job's own
 * fields needs that other Job rendered first. Decision: such references are allowed as long as
 * they are acyclic (Job `a` may carry the name of Job `b`; Deployments, CronJobs, tests, steps
 * and workflow parameters may carry any Job's name, since nothing hashes them into a Job name).
 * A Job that references its own name, or Jobs that reference each other's names, have no
 * fixed point: each reference on such a cycle is `TemplateUnresolved` with the why
 * `Job workload "<a>" references its own name (a Job's name hashes its rendered spec)` or
 * `Job workload names depend on each other: <a> -> <b> -> <a> (...)`. A Job that only
 * depends on a cycle (`blocked`) fails through the cycle's error, which is not repeated.
 * `order`: resolvable Jobs, dependencies first (spec order among equals).
 */
interface JobNamePlan {
  /** Jobs whose names resolve, dependencies first. */
  order: string[]
  /** Jobs not on a cycle that depend (transitively) on one. */
  blocked: string[]
  /** Jobs on a name cycle. */
  cyclic: Set<string>
  /** For the workload `owner`: the why of every cyclic Job's `.name`, as seen from `owner`. */
  cycleWhys: (owner: string) => Array<[string, string]>
}

function jobNamePlan(jobs: ReadonlyArray<{ w: Workload; slots: Slot[] }>): JobNamePlan {
  const names = jobs.map((j) => j.w.name)
  const isJob = new Set(names)
  const edges = new Map(jobs.map((j) => [j.w.name, [...nameReferences(j.slots)].filter((n) => isJob.has(n))]))
  // Kahn's algorithm; what is left is on a cycle or behind one.
  const order: string[] = []
  const done = new Set<string>()
  for (let progress = true; progress;) {
    progress = false
    for (const n of names) {
      if (!done.has(n) && edges.get(n)!.every((d) => done.has(d))) { done.add(n); order.push(n); progress = true }
    }
  }
  const rest = names.filter((n) => !done.has(n))
  /** Shortest path `from` -> ... -> `to` over the remaining Jobs (BFS), undefined when none. */
  const path = (from: string, to: string): string[] | undefined => {
    const previous = new Map<string, string>()
    const queue = [from]
    const seen = new Set([from])
    while (queue.length > 0) {
      const n = queue.shift()!
      for (const d of edges.get(n)!) {
        if (done.has(d)) continue
        if (d === to) {
          const out = [to]
          for (let at: string | undefined = n; at !== undefined; at = previous.get(at)) out.unshift(at)
          return out
        }
        if (!seen.has(d)) { seen.add(d); previous.set(d, n); queue.push(d) }
      }
    }
    return undefined
  }
  const cyclic = new Set(rest.filter((n) => path(n, n) !== undefined))
  const blocked = rest.filter((n) => !cyclic.has(n))
  const why = (cycle: string[]): string => cycle.length === 2
    ? `Job workload "${cycle[0]}" references its own name (${JOB_NAME_HASH})`
    : `Job workload names depend on each other: ${cycle.join(' -> ')} (${JOB_NAME_HASH})`
  const cycleWhys = (owner: string): Array<[string, string]> => [...cyclic].map((target) => {
    // From a Job on the same cycle: the cycle through this reference; otherwise the target's own cycle.
    const back = cyclic.has(owner) ? path(target, owner) : undefined
    const cycle = back ? [owner, ...back] : path(target, target)!
    return [target, why(owner === target ? [owner, owner] : cycle)]
  })
  return { order, blocked, cyclic, cycleWhys }
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
  // Workloads: included Job workloads first, in the order their names need (jobNamePlan), then
  // the others; errors are kept per workload and collected in spec order.
  const recipeRef = recipeRefOf(recipe)
  const prepared = workloads.map((w) => {
    const slots: Slot[] = []
    const copy = workloadSlots(w, slots)
    return { w, slots, copy, owner: `workload "${w.name}"`, errors: [] as SpecError[] }
  })
  const byName = new Map(prepared.map((p) => [p.w.name, p]))
  const rendered = new Map<string, RenderedWorkload>()
  const plan = jobNamePlan(prepared.filter((p) => included.has(p.w.name) && isNamedByContent(p.w)))
  // Until a Job is rendered its name is unknown (a failure reported elsewhere, if ever read).
  for (const name of [...plan.order, ...plan.blocked]) ctx.workloads.get(name)!.nameUnresolved = null
  const resolvable = new Set(plan.order)
  const renderWorkload = (p: (typeof prepared)[number]): void => {
    for (const [target, why] of plan.cycleWhys(p.w.name)) ctx.workloads.get(target)!.nameUnresolved = why
    const all = renderSlots(p.slots, p.owner, ctx, p.errors)
    const ref = ctx.workloads.get(p.w.name)!
    const out: RenderedWorkload = { ...p.copy, namespace: ref.namespace, base: baseName(identity.namespace, identity.name, p.w.name) }
    rendered.set(p.w.name, out)
    if (resolvable.has(p.w.name) && all) { ref.name = jobNameOf(recipeRef, out); delete ref.nameUnresolved }
  }
  for (const name of [...plan.order, ...plan.blocked, ...plan.cyclic]) renderWorkload(byName.get(name)!)
  for (const p of prepared) {
    if (!included.has(p.w.name)) checkSyntax(p.slots, p.owner, p.errors)
    else if (!rendered.has(p.w.name)) renderWorkload(p)
  }
  for (const p of prepared) errors.push(...p.errors)
  // Tests, steps and workflow parameters see each cyclic Job through its own cycle.
  for (const [target, why] of plan.cycleWhys('')) ctx.workloads.get(target)!.nameUnresolved = why
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
