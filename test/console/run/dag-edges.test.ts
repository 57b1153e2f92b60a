import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { layoutSteps, NODE_HEIGHT, NODE_WIDTH } from '../../../shared/console/run/dag-layout.js'
import { stepDagSvg } from '../../../shared/console/run/dag-svg.js'
import { runView } from '../../../shared/console/run/run-view.js'
import type { Workflow, WorkflowStep } from '../../../shared/schemas/workflow.js'
import { aStep, aWorkflow } from '../../fixtures/workflows.js'

// The drawing as a browser paints it, read back from the SVG markup: each node's box and each
// edge's path, sampled along its lines and curves. An edge may touch its own two ends, never
// pass through a box.

type Point = { x: number; y: number }
type Box = { step: string; x: number; y: number }
type Edge = { from: string; to: string; d: string }

function drawing(wf: Workflow): { boxes: Box[]; edges: Edge[] } {
  const view = runView(wf, new Date('2026-12-01T12:00:00Z'))
  const svg = stepDagSvg(layoutSteps(wf.spec.steps), view.steps, 'ai-agents', wf.metadata.name ?? 'wf').html
  const boxes = [...svg.matchAll(/<g class="node [^"]*" data-step="([^"]+)" transform="translate\(([-\d.]+),([-\d.]+)\)"/g)]
    .map((m) => ({ step: m[1]!, x: Number(m[2]), y: Number(m[3]) }))
  const edges = [...svg.matchAll(/<path class="dag-edge" data-from="([^"]+)" data-to="([^"]+)" d="([^"]+)"/g)]
    .map((m) => ({ from: m[1]!, to: m[2]!, d: m[3]! }))
  return { boxes, edges }
}

/** Points along an SVG path of M, L and C commands (absolute), 32 per segment. */
function samples(d: string): Point[] {
  const tokens = d.match(/[MLC]|-?[\d.]+/g) ?? []
  const out: Point[] = []
  let at: Point = { x: 0, y: 0 }
  let i = 0
  const num = () => Number(tokens[i++])
  while (i < tokens.length) {
    const cmd = tokens[i++]
    if (cmd === 'M') {
      at = { x: num(), y: num() }
      out.push(at)
    } else if (cmd === 'L') {
      const to = { x: num(), y: num() }
      for (let k = 1; k <= 32; k++) out.push({ x: at.x + ((to.x - at.x) * k) / 32, y: at.y + ((to.y - at.y) * k) / 32 })
      at = to
    } else if (cmd === 'C') {
      const [c1, c2, to] = [{ x: num(), y: num() }, { x: num(), y: num() }, { x: num(), y: num() }]
      for (let k = 1; k <= 32; k++) {
        const t = k / 32
        const u = 1 - t
        out.push({
          x: u * u * u * at.x + 3 * u * u * t * c1.x + 3 * u * t * t * c2.x + t * t * t * to.x,
          y: u * u * u * at.y + 3 * u * u * t * c1.y + 3 * u * t * t * c2.y + t * t * t * to.y,
        })
      }
      at = to
    } else throw new Error(`unexpected path command ${cmd} in ${d}`)
  }
  return out
}

/** "a -> b passes through c's box" for every edge drawn through a node. */
function crossedBoxes(wf: Workflow): string[] {
  const { boxes, edges } = drawing(wf)
  expect(edges.length).toBe(wf.spec.steps.reduce((n, s) => n + (s.dependsOn?.length ?? 0), 0))
  const problems = new Set<string>()
  for (const e of edges) {
    for (const p of samples(e.d)) {
      for (const b of boxes) {
        const inside = p.x > b.x + 0.5 && p.x < b.x + NODE_WIDTH - 0.5 && p.y > b.y + 0.5 && p.y < b.y + NODE_HEIGHT - 0.5
        if (inside) problems.add(`${e.from} -> ${e.to} passes through ${b.step}'s box`)
      }
    }
  }
  return [...problems]
}

const workflow = (steps: WorkflowStep[]) => aWorkflow({ spec: { steps } })

describe('DAG edges and node boxes', () => {
  it('draws the demo run without deep-audit -> publish passing through draft-notes', () => {
    const demo = parseYaml(readFileSync(join(import.meta.dirname, '../../../examples/local/20-workflow.yaml'), 'utf8')) as Workflow
    expect(demo.spec.steps.find((s) => s.name === 'publish')?.dependsOn).toEqual(['draft-notes', 'deep-audit'])
    expect(crossedBoxes(workflow(demo.spec.steps))).toEqual([])
  })

  it('routes an edge that skips several layers beside the steps it passes, whatever their order', () => {
    // a feeds every layer; the chain b -> c -> d -> e sits right under it.
    const steps = [aStep('a'), aStep('b', { dependsOn: ['a'] }), aStep('c', { dependsOn: ['b'] }), aStep('d', { dependsOn: ['c'] }), aStep('e', { dependsOn: ['d', 'a'] }), aStep('f', { dependsOn: ['a', 'c'] })]
    expect(crossedBoxes(workflow(steps))).toEqual([])
  })

  it('never draws an edge through a box, on random DAGs', () => {
    const dags = fc.integer({ min: 2, max: 40 }).chain((n) => fc.tuple(
      ...Array.from({ length: n }, (_, i) => fc.uniqueArray(fc.integer({ min: 0, max: Math.max(0, i - 1) }), { maxLength: i === 0 ? 0 : Math.min(i, 4) })),
    )).map((deps) => deps.map((d, i) => aStep(`s${i}`, d.length ? { dependsOn: d.map((j) => `s${j}`) } : {})))
    fc.assert(fc.property(dags, (steps) => {
      expect(crossedBoxes(workflow(steps))).toEqual([])
    }), { numRuns: 150 })
  })
})
