import type { WorkflowStep } from '../../schemas/workflow.js'

/** One problem with a Workflow's step graph, in a form fit for a status condition. */
export interface SpecIssue {
  reason: 'DuplicateStep' | 'MissingExecutor' | 'UnknownDependency' | 'SelfDependency' | 'DependencyCycle' | 'UnknownInputStep'
  message: string
}

/**
 * Pure: the graph problems the API server's CEL rules cannot catch cheaply (dependency existence
 * and cycles), plus the per-step rules again for objects stored before the CRD had them.
 * Messages follow purko's webhook wording. `order` may be passed when the caller has it already.
 */
export function validateSteps(steps: readonly WorkflowStep[], order: number[] | null = topologicalOrder(steps)): SpecIssue[] {
  const issues: SpecIssue[] = []
  const names = new Set<string>()
  for (const step of steps) {
    if (names.has(step.name)) issues.push({ reason: 'DuplicateStep', message: `WF-002: duplicate step name: "${step.name}"` })
    names.add(step.name)
    if (!step.agentRef?.name && !step.type) {
      issues.push({ reason: 'MissingExecutor', message: `step "${step.name}" must have either agentRef.name or type` })
    }
  }
  for (const step of steps) {
    for (const dep of step.dependsOn ?? []) {
      if (dep === step.name) issues.push({ reason: 'SelfDependency', message: `WF-003: step "${step.name}" cannot depend on itself` })
      else if (!names.has(dep)) {
        issues.push({ reason: 'UnknownDependency', message: `WF-003: step "${step.name}" depends on non-existent step "${dep}"` })
      }
    }
    for (const ref of step.inputFrom ?? []) {
      if (!names.has(ref.step)) {
        issues.push({ reason: 'UnknownInputStep', message: `step "${step.name}" takes input from non-existent step "${ref.step}"` })
      }
    }
  }
  if (issues.length === 0 && order === null) {
    issues.push({ reason: 'DependencyCycle', message: 'WF-004: dependency cycle detected among steps' })
  }
  return issues
}

/**
 * Pure: step indexes in an order where every step follows its dependencies, preferring spec
 * order among steps that are ready together; null when the graph has a cycle. O(steps + edges).
 */
export function topologicalOrder(steps: readonly WorkflowStep[]): number[] | null {
  const index = new Map(steps.map((s, i) => [s.name, i]))
  const pending = steps.map(() => 0)
  const dependents: number[][] = steps.map(() => [])
  steps.forEach((step, i) => {
    for (const dep of new Set(step.dependsOn ?? [])) {
      const d = index.get(dep)
      if (d === undefined || d === i) continue
      pending[i]! += 1
      dependents[d]!.push(i)
    }
  })
  // A binary heap keyed by spec index keeps the order stable without sorting per step.
  const heap = new MinHeap()
  pending.forEach((n, i) => { if (n === 0) heap.push(i) })
  const order: number[] = []
  while (heap.size > 0) {
    const i = heap.pop()
    order.push(i)
    for (const j of dependents[i]!) {
      pending[j]! -= 1
      if (pending[j] === 0) heap.push(j)
    }
  }
  return order.length === steps.length ? order : null
}

class MinHeap {
  private items: number[] = []
  get size(): number { return this.items.length }
  push(value: number): void {
    const a = this.items
    a.push(value)
    let i = a.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (a[parent]! <= value) break
      a[i] = a[parent]!
      i = parent
    }
    a[i] = value
  }
  pop(): number {
    const a = this.items
    const top = a[0]!
    const last = a.pop()!
    if (a.length > 0) {
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        if (l >= a.length) break
        const r = l + 1
        const c = r < a.length && a[r]! < a[l]! ? r : l
        if (a[c]! >= last) break
        a[i] = a[c]!
        i = c
      }
      a[i] = last
    }
    return top
  }
}
