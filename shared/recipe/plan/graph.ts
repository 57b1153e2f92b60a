/**
 * The dependency graph (spec §1 step 4, §3.2, §7.11, §8.2): unknown names and cycles are
 * checked over every declared workload (or step), included or not, so a profile never hides a
 * cycle; the included workloads are then ordered by Kahn's algorithm taking, each round, the
 * first in spec order whose included dependencies are placed. Pure and deterministic.
 */
import type { SpecError } from './rendered.js'

export interface GraphNode {
  name: string
  dependsOn?: string[] | undefined
}

/** `workload` for spec.workloads, `step` for spec.steps (the message wording of spec §8.2). */
export type GraphKind = 'workload' | 'step'

/** Pure: `UnknownDependency` and `DependencyCycle` errors over all `nodes`. */
export function checkGraph(nodes: readonly GraphNode[], kind: GraphKind): SpecError[] {
  const errors: SpecError[] = []
  const names = new Set(nodes.map((n) => n.name))
  const plural = kind === 'workload' ? 'workloads' : 'steps'
  for (const node of nodes) {
    const seen = new Set<string>()
    for (const dep of node.dependsOn ?? []) {
      if (names.has(dep) || seen.has(dep)) continue
      seen.add(dep)
      errors.push({
        reason: 'UnknownDependency',
        message: `${kind} "${node.name}" depends on unknown ${kind} "${dep}"`,
        field: `spec.${plural}[${node.name}].dependsOn`,
      })
    }
  }
  const prefix = kind === 'workload' ? 'dependency cycle' : 'step dependency cycle'
  for (const cycle of findCycles(nodes)) {
    errors.push({ reason: 'DependencyCycle', message: `${prefix}: ${cycle.join(' -> ')}`, field: `spec.${plural}[${cycle[0]}].dependsOn` })
  }
  return errors
}

/**
 * One cycle per strongly connected component that has one, each starting (and ending) at its
 * alphabetically first member and following the shortest path back to it (breadth first,
 * dependencies in declared order); cycles sorted by that first member.
 */
export function findCycles(nodes: readonly GraphNode[]): string[][] {
  const edges = new Map<string, string[]>()
  for (const n of nodes) edges.set(n.name, [])
  for (const n of nodes) {
    for (const d of n.dependsOn ?? []) if (edges.has(d) && !edges.get(n.name)!.includes(d)) edges.get(n.name)!.push(d)
  }
  const components = stronglyConnected([...edges.keys()], edges)
  const cycles: string[][] = []
  for (const component of components) {
    const members = new Set(component)
    const start = [...component].sort()[0]!
    const hasCycle = component.length > 1 || edges.get(start)!.includes(start)
    if (!hasCycle) continue
    // Breadth first from start back to start, staying inside the component.
    const previous = new Map<string, string>()
    const queue: string[] = [start]
    let end: string | null = null
    while (queue.length > 0 && end === null) {
      const current = queue.shift()!
      for (const next of edges.get(current)!) {
        if (!members.has(next)) continue
        if (next === start) { end = current; break }
        if (!previous.has(next)) { previous.set(next, current); queue.push(next) }
      }
    }
    const path: string[] = [start]
    let at = end!
    const back: string[] = []
    while (at !== start) { back.push(at); at = previous.get(at)! }
    path.push(...back.reverse(), start)
    cycles.push(path)
  }
  return cycles.sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0))
}

function stronglyConnected(names: string[], edges: Map<string, string[]>): string[][] {
  // Tarjan's algorithm, iterative so deep graphs cannot exhaust the stack.
  let index = 0
  const indices = new Map<string, number>()
  const low = new Map<string, number>()
  const onStack = new Set<string>()
  const stack: string[] = []
  const result: string[][] = []
  for (const root of names) {
    if (indices.has(root)) continue
    const work: Array<{ node: string; next: number }> = [{ node: root, next: 0 }]
    indices.set(root, index); low.set(root, index); index++
    stack.push(root); onStack.add(root)
    while (work.length > 0) {
      const frame = work[work.length - 1]!
      const deps = edges.get(frame.node)!
      if (frame.next < deps.length) {
        const dep = deps[frame.next++]!
        if (!indices.has(dep)) {
          indices.set(dep, index); low.set(dep, index); index++
          stack.push(dep); onStack.add(dep)
          work.push({ node: dep, next: 0 })
        } else if (onStack.has(dep)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, indices.get(dep)!))
        }
        continue
      }
      work.pop()
      const parent = work[work.length - 1]
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!))
      if (low.get(frame.node) === indices.get(frame.node)) {
        const component: string[] = []
        let member: string
        do { member = stack.pop()!; onStack.delete(member); component.push(member) } while (member !== frame.node)
        result.push(component)
      }
    }
  }
  return result
}

/**
 * Pure: spec §7.11 order of the `included` nodes (spec order kept in `nodes`): dependencies on
 * excluded or unknown nodes count as satisfied. Assumes {@link checkGraph} found no cycle; nodes
 * left on a cycle anyway are appended in spec order so the result always lists every one.
 */
export function topologicalOrder(nodes: readonly GraphNode[], included: ReadonlySet<string>): string[] {
  const pending = nodes.filter((n) => included.has(n.name))
  const placed = new Set<string>()
  const order: string[] = []
  while (pending.length > 0) {
    const i = pending.findIndex((n) => (n.dependsOn ?? []).every((d) => placed.has(d) || !included.has(d) || d === n.name))
    if (i < 0) break
    const [next] = pending.splice(i, 1)
    placed.add(next!.name)
    order.push(next!.name)
  }
  return order.concat(pending.map((n) => n.name))
}
