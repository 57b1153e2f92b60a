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
 * depends on a cycle (`blocked`) fails through the cycle's error, which is not repeated. Pure.
 */
import type { Workload } from '../../schemas/workflowrecipe.js'
import type { Slot } from './template-fields.js'
import { parseTemplate } from './template.js'

/** Whether the workload's main object is named by its content (spec §5.2: a Job workload, `base(w)-<h8>`). */
export function isNamedByContent(workload: Workload): boolean {
  return workload.kind === 'Job' && workload.transport !== 'stdio'
}

/** The workloads whose `.name` a set of slots references. */
function nameReferences(slots: readonly Slot[]): Set<string> {
  const names = new Set<string>()
  for (const slot of slots) {
    const parsed = parseTemplate(slot.template)
    if (!parsed.ok) continue
    for (const segment of parsed.segments) {
      const match = segment.kind === 'ref' ? /^workloads\.([^.]+)\.name$/.exec(segment.ref) : null
      if (match) names.add(match[1]!)
    }
  }
  return names
}

const JOB_NAME_HASH = "a Job's name hashes its rendered spec"

/** The order of the Job workloads' names; `order`: resolvable Jobs, dependencies first (spec order among equals). */
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

/** Pure: the name plan of the included Job workloads, each with the slots of its fields. */
export function jobNamePlan(jobs: ReadonlyArray<{ workload: Workload; slots: Slot[] }>): JobNamePlan {
  const names = jobs.map((job) => job.workload.name)
  const isJob = new Set(names)
  const edges = new Map(jobs.map((job) => [job.workload.name, [...nameReferences(job.slots)].filter((name) => isJob.has(name))]))
  // Kahn's algorithm; what is left is on a cycle or behind one.
  const order: string[] = []
  const done = new Set<string>()
  for (let progress = true; progress;) {
    progress = false
    for (const name of names) {
      if (!done.has(name) && edges.get(name)!.every((dependency) => done.has(dependency))) { done.add(name); order.push(name); progress = true }
    }
  }
  const rest = names.filter((name) => !done.has(name))
  /** Shortest path `from` -> ... -> `to` over the remaining Jobs (BFS), undefined when none. */
  const path = (from: string, to: string): string[] | undefined => {
    const previous = new Map<string, string>()
    const queue = [from]
    const seen = new Set([from])
    while (queue.length > 0) {
      const current = queue.shift()!
      for (const dependency of edges.get(current)!) {
        if (done.has(dependency)) continue
        if (dependency === to) {
          const out = [to]
          for (let at: string | undefined = current; at !== undefined; at = previous.get(at)) out.unshift(at)
          return out
        }
        if (!seen.has(dependency)) { seen.add(dependency); previous.set(dependency, current); queue.push(dependency) }
      }
    }
    return undefined
  }
  const cyclic = new Set(rest.filter((name) => path(name, name) !== undefined))
  const blocked = rest.filter((name) => !cyclic.has(name))
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
