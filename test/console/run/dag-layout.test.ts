import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  layoutDag, layoutGroups, layoutSteps, MAX_DRAWN_STEPS, MAX_GROUPS, NODE_HEIGHT, NODE_WIDTH, stepLayers,
} from '../../../shared/console/run/dag-layout.js'
import type { WorkflowStep } from '../../../shared/schemas/workflow.js'
import { aChain, aStep } from '../../fixtures/workflows.js'

const steps = (spec: Record<string, string[]>): WorkflowStep[] =>
  Object.entries(spec).map(([name, deps]) => aStep(name, deps.length ? { dependsOn: deps } : {}))

/** Crossings between consecutive layers: pairs of edges whose ends are in opposite order. */
function crossings(wf: WorkflowStep[]): number {
  const layout = layoutSteps(wf)
  const at = new Map(layout.nodes.map((n) => [n.step, n]))
  let count = 0
  for (const a of layout.edges) {
    for (const b of layout.edges) {
      const [a1, a2, b1, b2] = [at.get(a.from)!, at.get(a.to)!, at.get(b.from)!, at.get(b.to)!]
      if (a1.layer !== b1.layer || a2.layer !== b2.layer || a2.layer !== a1.layer + 1) continue
      if (a1.order < b1.order && a2.order > b2.order) count++
    }
  }
  return count
}

describe('the layered layout of a run', () => {
  it('puts each step one layer below its deepest dependency', () => {
    expect(stepLayers(steps({ a: [], b: ['a'], c: ['a'], d: ['b', 'c'], e: ['a', 'd'] }))).toEqual([0, 1, 1, 2, 3])
  })

  it('orders a layer to uncross edges the spec order would cross', () => {
    // Spec order puts x (after b) left of y (after a): drawn as listed, the two edges cross.
    const wf = steps({ a: [], b: [], x: ['b'], y: ['a'] })
    expect(crossings(wf)).toBe(0)
    const layout = layoutSteps(wf)
    const orderOf = (name: string) => layout.nodes[wf.findIndex((s) => s.name === name)]!.order
    expect(orderOf('y')).toBeLessThan(orderOf('x'))
  })

  it('gives the same picture for the same spec, whatever the run status (no layout shift)', () => {
    const wf = steps({ a: [], b: ['a'], c: ['a'], d: ['b'], e: ['c', 'b'], f: ['d', 'e'] })
    expect(layoutSteps(structuredClone(wf))).toEqual(layoutSteps(wf))
  })

  it('still lays out a cycle the engine would refuse, without looping', () => {
    const layout = layoutSteps(steps({ a: ['b'], b: ['a'], c: [] }))
    expect(layout.nodes).toHaveLength(3)
  })

  it(`draws every step up to ${MAX_DRAWN_STEPS}, and groups of layers above`, () => {
    expect(layoutDag(aChain(MAX_DRAWN_STEPS)).kind).toBe('steps')
    expect(layoutDag(aChain(MAX_DRAWN_STEPS + 1)).kind).toBe('groups')
  })

  it('groups a 2,000-step fan-out into its three layers', () => {
    const fan = [aStep('start'), ...Array.from({ length: 1998 }, (_, i) => aStep(`w${i}`, { dependsOn: ['start'] })), aStep('join', { dependsOn: Array.from({ length: 64 }, (_, i) => `w${i}`) })]
    const layout = layoutGroups(fan)
    expect(layout.groups.map((g) => g.steps.length)).toEqual([1, 1998, 1])
    expect(layout.edges).toEqual([{ from: 0, to: 1 }, { from: 1, to: 2 }])
  })

  it(`puts several layers in one group when a run is deeper than ${MAX_GROUPS} layers`, () => {
    const layout = layoutGroups(aChain(1000))
    expect(layout.groups.length).toBeLessThanOrEqual(MAX_GROUPS)
    expect(layout.groups.reduce((n, g) => n + g.steps.length, 0)).toBe(1000)
    expect(layout.groups[0]).toMatchObject({ firstLayer: 0, lastLayer: 24 })
  })
})

/** Random DAGs: each step may depend on any earlier ones (so there is never a cycle). */
const dags = fc.integer({ min: 1, max: 60 }).chain((n) => fc.tuple(
  ...Array.from({ length: n }, (_, i) => fc.uniqueArray(fc.integer({ min: 0, max: Math.max(0, i - 1) }), { maxLength: i === 0 ? 0 : Math.min(i, 5) })),
)).map((deps) => deps.map((d, i) => aStep(`s${i}`, d.length ? { dependsOn: d.map((j) => `s${j}`) } : {})))

describe('layout properties', () => {
  it('every edge goes from a lower layer to a higher one, and no two nodes overlap', () => {
    fc.assert(fc.property(dags, (wf) => {
      const layout = layoutSteps(wf)
      const at = new Map(layout.nodes.map((n) => [n.step, n]))
      for (const e of layout.edges) expect(at.get(e.from)!.layer).toBeLessThan(at.get(e.to)!.layer)
      // Every dependency is drawn: none is dropped as a back edge in an acyclic spec.
      expect(layout.edges.length).toBe(wf.reduce((n, s) => n + (s.dependsOn?.length ?? 0), 0))
      const nodes = layout.nodes
      const problems: string[] = []
      for (let i = 0; i < nodes.length; i++) {
        const a = nodes[i]!
        if (a.x < 0 || a.x + NODE_WIDTH > layout.width || a.y + NODE_HEIGHT > layout.height) problems.push(`s${a.step} outside the drawing`)
        for (let j = i + 1; j < nodes.length; j++) {
          const b = nodes[j]!
          const apart = a.x + NODE_WIDTH <= b.x || b.x + NODE_WIDTH <= a.x || a.y + NODE_HEIGHT <= b.y || b.y + NODE_HEIGHT <= a.y
          if (!apart) problems.push(`s${a.step} overlaps s${b.step}`)
        }
      }
      expect(problems).toEqual([])
    }), { numRuns: 200 })
  })
})
