/**
 * Where each step of a run is drawn: layered top to bottom (a step one layer below its
 * deepest dependency), ordered within a layer by barycentre sweeps to cut edge crossings, on a
 * fixed grid. A dependency that skips layers runs down a lane of its own through each layer it
 * passes (a lane per dependency source and layer, ordered with the steps), so no edge is ever
 * drawn through a step's box. Pure and deterministic: it reads only the spec, so a live status
 * change never moves a node (no layout shift), and the same spec always gives the same picture.
 */
import { topologicalOrder } from '../../workflow/plan/dag.js'
import type { WorkflowStep } from '../../schemas/workflow.js'

/**
 * Above this many steps the DAG is drawn as one node per layer group, with a paged table
 * beside it. 150 nodes on a 180-pixel grid is already ~15 phone screens wide or tall; past that
 * labels cannot be read, the inline SVG grows past ~100 KB, and every live patch touches more
 * nodes than anyone can follow. It stays below DETAILED_STATUS_MAX_STEPS (200), above which
 * the status keeps only one character per finished step, so per-step detail is thinner anyway.
 */
export const MAX_DRAWN_STEPS = 150
/** Most group nodes a grouped drawing has; deeper runs put several layers in one group. */
export const MAX_GROUPS = 40

/** Fixed node size and gaps (SVG user units): status never changes a node's box. */
export const NODE_WIDTH = 168
export const NODE_HEIGHT = 44
export const GAP_X = 24
export const GAP_Y = 40
export const MARGIN = 12
/** Room on either side of a lane (a long edge passing a layer): a lane between two steps fits their usual gap. */
export const LANE_GAP = GAP_X / 2
/** Barycentre sweeps (down then up count as two); more brings little on real workflows. */
const SWEEPS = 8

/** One drawn step. */
export interface LayoutNode {
  /** Index in spec.steps. */
  step: number
  layer: number
  /** Position within the layer, left to right. */
  order: number
  x: number
  y: number
}

/** A dependency edge, from the dependency to the step that waits for it. */
export interface LayoutEdge {
  from: number
  to: number
}

/** A drawn dependency edge. */
export interface RoutedEdge extends LayoutEdge {
  /** The x of its lane in each layer strictly between its ends, top to bottom (empty between adjacent layers). */
  lanes: number[]
}

/** Every step drawn. */
export interface StepLayout {
  kind: 'steps'
  nodes: LayoutNode[]
  edges: RoutedEdge[]
  layers: number
  width: number
  height: number
}

/** A group of consecutive layers drawn as one node. */
export interface LayerGroup {
  /** First and last layer (inclusive, 0-based). */
  firstLayer: number
  lastLayer: number
  /** Spec indexes of the steps in it, in spec order. */
  steps: number[]
  x: number
  y: number
}

/** One node per layer group. */
export interface GroupLayout {
  kind: 'groups'
  groups: LayerGroup[]
  /** Group index pairs with at least one dependency between them. */
  edges: LayoutEdge[]
  layers: number
  width: number
  height: number
}

/** Width of a group node (a stacked phase bar needs room). */
export const GROUP_WIDTH = 360
export const GROUP_HEIGHT = 64

/**
 * Pure: each step's layer: 0 without dependencies, else one more than its deepest dependency.
 * Unknown and self dependencies are ignored; in a cycle (a spec the engine refuses) a
 * dependency not placed yet is ignored, so the result still exists.
 */
export function stepLayers(steps: readonly WorkflowStep[]): number[] {
  const index = new Map(steps.map((s, i) => [s.name, i]))
  const order = topologicalOrder(steps) ?? steps.map((_, i) => i)
  const layer: number[] = steps.map(() => -1)
  for (const i of order) {
    let deepest = -1
    for (const dep of steps[i]!.dependsOn ?? []) {
      const d = index.get(dep)
      if (d === undefined || d === i) continue
      deepest = Math.max(deepest, layer[d]!)
    }
    layer[i] = deepest + 1
  }
  return layer
}

/** Pure: the dependency edges between known, distinct steps (duplicates once). */
export function stepEdges(steps: readonly WorkflowStep[]): LayoutEdge[] {
  const index = new Map(steps.map((s, i) => [s.name, i]))
  const edges: LayoutEdge[] = []
  steps.forEach((step, to) => {
    for (const dep of new Set(step.dependsOn ?? [])) {
      const from = index.get(dep)
      if (from !== undefined && from !== to) edges.push({ from, to })
    }
  })
  return edges
}

/** Pure: the drawing of a run: every step, or one node per layer group above MAX_DRAWN_STEPS. */
export function layoutDag(steps: readonly WorkflowStep[], maxDrawn = MAX_DRAWN_STEPS): StepLayout | GroupLayout {
  return steps.length > maxDrawn ? layoutGroups(steps) : layoutSteps(steps)
}

/** Pure: every step on the grid, with a lane for each long edge in each layer it passes. */
export function layoutSteps(steps: readonly WorkflowStep[]): StepLayout {
  const layer = stepLayers(steps)
  const deps = stepEdges(steps).filter((e) => layer[e.from]! < layer[e.to]!)
  const layerCount = steps.length === 0 ? 0 : Math.max(...layer) + 1

  // Items 0..n-1 are the steps; the rest are lanes, one per (source, layer) however many of
  // the source's edges pass that layer, so edges from one step share their way down.
  const itemLayer = [...layer]
  const up: number[][] = steps.map(() => [])
  const down: number[][] = steps.map(() => [])
  const lanes = new Map<string, number>()
  const link = (a: number, b: number) => {
    if (!down[a]!.includes(b)) down[a]!.push(b)
    if (!up[b]!.includes(a)) up[b]!.push(a)
  }
  const laneOf = (source: number, l: number): number => {
    const key = `${source}:${l}`
    let lane = lanes.get(key)
    if (lane === undefined) {
      lane = itemLayer.length
      lanes.set(key, lane)
      itemLayer.push(l)
      up.push([])
      down.push([])
      link(l - 1 === layer[source] ? source : laneOf(source, l - 1), lane)
    }
    return lane
  }
  for (const e of deps) {
    const last = layer[e.to]! - 1
    link(last === layer[e.from] ? e.from : laneOf(e.from, last), e.to)
  }
  const isStep = (item: number) => item < steps.length

  const rows: number[][] = Array.from({ length: layerCount }, () => [])
  itemLayer.forEach((l, item) => rows[l]!.push(item))
  const position = new Float64Array(itemLayer.length)
  const place = (row: number[]) => row.forEach((s, i) => { position[s] = i })
  rows.forEach(place)
  const sortBy = (row: number[], neighbours: number[][]) => {
    const key = new Map(row.map((s) => {
      const ns = neighbours[s]!
      // An item without neighbours on that side keeps its place.
      return [s, ns.length === 0 ? position[s]! : ns.reduce((sum, n) => sum + position[n]!, 0) / ns.length]
    }))
    row.sort((a, b) => key.get(a)! - key.get(b)! || position[a]! - position[b]! || a - b)
    place(row)
  }
  for (let sweep = 0; sweep < SWEEPS; sweep++) {
    if (sweep % 2 === 0) for (let l = 1; l < layerCount; l++) sortBy(rows[l]!, up)
    else for (let l = layerCount - 2; l >= 0; l--) sortBy(rows[l]!, down)
  }

  // Left edges of each row's items, from 0: steps are NODE_WIDTH wide, lanes are lines.
  const offsets = rows.map((row) => {
    let x = 0
    return row.map((item, i) => {
      if (i > 0) x += isStep(item) && isStep(row[i - 1]!) ? GAP_X : LANE_GAP
      const at = x
      if (isStep(item)) x += NODE_WIDTH
      return at
    })
  })
  const rowWidth = (row: number[], l: number) => (row.length === 0 ? 0 : offsets[l]!.at(-1)! + (isStep(row.at(-1)!) ? NODE_WIDTH : 0))
  const widest = Math.max(0, ...rows.map(rowWidth))
  const width = MARGIN * 2 + widest
  const x = new Float64Array(itemLayer.length)
  rows.forEach((row, l) => {
    // Centre each row so a narrow layer sits under the middle of a wide one.
    const left = (width - rowWidth(row, l)) / 2
    row.forEach((item, i) => { x[item] = left + offsets[l]![i]! })
  })
  const nodes: LayoutNode[] = []
  rows.forEach((row, l) => {
    let order = 0
    for (const item of row) {
      if (isStep(item)) nodes.push({ step: item, layer: l, order: order++, x: x[item]!, y: MARGIN + l * (NODE_HEIGHT + GAP_Y) })
    }
  })
  nodes.sort((a, b) => a.step - b.step)
  const edges = deps.map((e) => ({
    ...e,
    lanes: Array.from({ length: layer[e.to]! - layer[e.from]! - 1 }, (_, i) => x[lanes.get(`${e.from}:${layer[e.from]! + 1 + i}`)!]!),
  }))
  const height = MARGIN * 2 + layerCount * NODE_HEIGHT + Math.max(0, layerCount - 1) * GAP_Y
  return { kind: 'steps', nodes, edges, layers: layerCount, width, height }
}

/**
 * Pure: the points an edge's drawing passes, top to bottom: the bottom middle of its source,
 * the top and bottom of each lane, and just above the top middle of its target. Between two
 * layers the drawing curves from one point to the next within the gap; along a lane it runs
 * straight down.
 */
export function edgePoints(layout: StepLayout, edge: RoutedEdge): Array<{ x: number; y: number }> {
  // Every step is a node, sorted by step.
  const from = layout.nodes[edge.from]!
  const to = layout.nodes[edge.to]!
  const top = (l: number) => MARGIN + l * (NODE_HEIGHT + GAP_Y)
  return [
    { x: from.x + NODE_WIDTH / 2, y: from.y + NODE_HEIGHT },
    ...edge.lanes.flatMap((x, i) => [{ x, y: top(from.layer + 1 + i) }, { x, y: top(from.layer + 1 + i) + NODE_HEIGHT }]),
    { x: to.x + NODE_WIDTH / 2, y: to.y - 2 },
  ]
}

/** Pure: one node per group of consecutive layers (at most MAX_GROUPS), in one column. */
export function layoutGroups(steps: readonly WorkflowStep[], maxGroups = MAX_GROUPS): GroupLayout {
  const layer = stepLayers(steps)
  const layerCount = steps.length === 0 ? 0 : Math.max(...layer) + 1
  const perGroup = Math.max(1, Math.ceil(layerCount / maxGroups))
  const groupCount = Math.ceil(layerCount / perGroup)
  const groups: LayerGroup[] = Array.from({ length: groupCount }, (_, g) => ({
    firstLayer: g * perGroup,
    lastLayer: Math.min(layerCount, (g + 1) * perGroup) - 1,
    steps: [],
    x: MARGIN,
    y: MARGIN + g * (GROUP_HEIGHT + GAP_Y),
  }))
  const groupOf = (step: number) => Math.floor(layer[step]! / perGroup)
  steps.forEach((_, i) => groups[groupOf(i)]!.steps.push(i))
  const seen = new Set<number>()
  const edges: LayoutEdge[] = []
  for (const e of stepEdges(steps)) {
    const from = groupOf(e.from)
    const to = groupOf(e.to)
    if (from >= to || seen.has(from * groupCount + to)) continue
    seen.add(from * groupCount + to)
    edges.push({ from, to })
  }
  edges.sort((a, b) => a.from - b.from || a.to - b.to)
  // Edges that skip a group are drawn as arcs on the right: leave room for them.
  const width = MARGIN * 2 + GROUP_WIDTH + 48
  const height = MARGIN * 2 + groupCount * GROUP_HEIGHT + Math.max(0, groupCount - 1) * GAP_Y
  return { kind: 'groups', groups, edges, layers: layerCount, width, height }
}
