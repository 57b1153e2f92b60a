/**
 * Where a recipe's templates are (spec §4): every templatable field of a workload, a test or a step
 * becomes a slot that knows its field, its path in the recipe, its check and where the rendered
 * text goes in a copy of its owner. `renderSlots` renders a slot list; `checkSyntax` only parses it,
 * for the fields of excluded workloads. Pure.
 */
import type { RecipeStep, Resources, Workload } from '../../schemas/workflowrecipe.js'
import type { TypedValue } from './cel.js'
import type { RenderedStep, SpecError } from './rendered.js'
import { parseTemplate, renderField, replicasOf, type FieldCheck, type TemplateContext } from './template.js'

/** One templatable field: where it is, its template, its check, and where the result goes. */
export interface Slot {
  field: string
  path: string
  template: string
  check?: FieldCheck
  assign: (text: string, outcome: { value: TypedValue | null }) => void
}

/** A workload as rendered: `replicas` is a number once its template is rendered. */
type WorkloadCopy = Omit<Workload, 'replicas'> & { replicas?: number }

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
      out.push({ field: `resources.${group}.${name}`, path: `${prefix}.resources.${group}.${name}`, template, check: 'quantity', assign: (text) => { target[name] = text } })
    }
  }
  return copy
}

/** The slots of a container's image, command, args, env values and resources, and the copy they render into. */
export function containerSlots<T extends { image: string; command?: string[] | undefined; args?: string[] | undefined; env?: Array<{ name: string; value: string }> | undefined; resources?: Resources | undefined }>(
  source: T, prefix: string, out: Slot[],
): T {
  const copy: T = { ...source }
  out.push({ field: 'image', path: `${prefix}.image`, template: source.image, check: 'image', assign: (text) => { copy.image = text } })
  for (const list of ['command', 'args'] as const) {
    const items = source[list]
    if (!items) continue
    const rendered = [...items]
    copy[list] = rendered
    items.forEach((template, i) => {
      out.push({ field: `${list}[${i}]`, path: `${prefix}.${list}[${i}]`, template, assign: (text) => { rendered[i] = text } })
    })
  }
  if (source.env) {
    const env = source.env.map((variable) => ({ ...variable }))
    copy.env = env
    env.forEach((variable) => {
      out.push({ field: `env[${variable.name}]`, path: `${prefix}.env[${variable.name}].value`, template: variable.value, assign: (text) => { variable.value = text } })
    })
  }
  const resources = resourceSlots(source.resources, prefix, out)
  if (resources) copy.resources = resources
  return copy
}

/** A workload's slots: its container's, plus replicas, schedule and volume claim sizes. */
export function workloadSlots(workload: Workload, out: Slot[]): WorkloadCopy {
  const prefix = `spec.workloads[${workload.name}]`
  const replicas = workload.replicas
  const copy = containerSlots(workload, prefix, out) as WorkloadCopy
  delete copy.replicas
  if (typeof replicas === 'number') copy.replicas = replicas
  else if (typeof replicas === 'string') {
    out.push({
      field: 'replicas', path: `${prefix}.replicas`, template: replicas, check: 'replicas',
      assign: (text, outcome) => { copy.replicas = replicasOf(text, outcome.value) ?? 0 },
    })
  }
  if (workload.schedule !== undefined) {
    out.push({ field: 'schedule', path: `${prefix}.schedule`, template: workload.schedule, check: 'cron', assign: (text) => { copy.schedule = text } })
  }
  if (workload.volumeClaimTemplates) {
    const claims = workload.volumeClaimTemplates.map((claim) => ({ ...claim }))
    copy.volumeClaimTemplates = claims
    for (const claim of claims) {
      out.push({ field: `volumeClaimTemplates[${claim.name}].storage`, path: `${prefix}.volumeClaimTemplates[${claim.name}].storage`, template: claim.storage, check: 'quantity', assign: (text) => { claim.storage = text } })
    }
  }
  return copy
}

function inputSlots(value: unknown, field: string, path: string, out: Slot[], set: (rendered: unknown) => void): unknown {
  if (typeof value === 'string') {
    out.push({ field, path, template: value, assign: (text) => set(text) })
    return value
  }
  if (Array.isArray(value)) {
    const copy = [...value]
    value.forEach((item, i) => { copy[i] = inputSlots(item, `${field}[${i}]`, `${path}[${i}]`, out, (rendered) => { copy[i] = rendered }) })
    return copy
  }
  if (typeof value === 'object' && value !== null) {
    const copy: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      copy[key] = inputSlots(item, `${field}.${key}`, `${path}.${key}`, out, (rendered) => { copy[key] = rendered })
    }
    return copy
  }
  return value
}

/** A step's slots: its task and every string anywhere in its input. */
export function stepSlots(step: RecipeStep, out: Slot[]): RenderedStep {
  const copy: RenderedStep = { ...step }
  const prefix = `spec.steps[${step.name}]`
  if (step.task !== undefined) out.push({ field: 'task', path: `${prefix}.task`, template: step.task, assign: (text) => { copy.task = text } })
  if (step.input !== undefined) {
    copy.input = inputSlots(step.input, 'input', `${prefix}.input`, out, (rendered) => { copy.input = rendered as Record<string, unknown> }) as Record<string, unknown>
  }
  return copy
}

/** Renders every slot of one owner, collecting errors; whether every slot rendered (silent failures included). */
export function renderSlots(slots: Slot[], owner: string, ctx: TemplateContext, errors: SpecError[]): boolean {
  let all = true
  for (const slot of slots) {
    const outcome = renderField(slot.template, owner, slot.field, ctx, slot.check, slot.path)
    if (outcome.ok) slot.assign(outcome.text, outcome)
    else { errors.push(...outcome.errors); all = false }
  }
  return all
}

/** Only the grammar (spec §4.1) for the fields of excluded workloads, so a profile never hides a typo in a placeholder. */
export function checkSyntax(slots: Slot[], owner: string, errors: SpecError[]): void {
  for (const slot of slots) {
    const parsed = parseTemplate(slot.template)
    if (!parsed.ok) {
      errors.push({ reason: 'TemplateSyntaxError', message: `${owner}: ${slot.field}: malformed placeholder at offset ${parsed.offset}`, field: slot.path })
    }
  }
}
