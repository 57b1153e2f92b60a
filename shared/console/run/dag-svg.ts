/**
 * The run's DAG as inline SVG, rendered on the server: each node a link to its step (Tab and
 * Enter reach it), its phase in words as well as colour, edges with arrowheads. The step table
 * beside it is the accessible form; the SVG carries a one-sentence summary. Pure.
 */
import { html, join, trusted, type Html } from '../html.js'
import {
  edgePoints, GROUP_HEIGHT, GROUP_WIDTH, NODE_HEIGHT, NODE_WIDTH, type GroupLayout, type StepLayout,
} from './dag-layout.js'
import { phaseClass } from '../phase.js'
import { phaseCounts, type StepView } from './run-view.js'

/** Characters of a step name that fit a node; the whole name is in its title. */
const LABEL_CHARS = 22

/** Pure: the URL of a step's detail page. */
export function stepHref(namespace: string, name: string, step: string): string {
  return `/workflows/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/steps/${encodeURIComponent(step)}`
}

function clip(text: string, chars = LABEL_CHARS): string {
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}\u2026`
}

/** Pure: "12 steps in 4 layers: 5 Succeeded, 2 Running, ..." for the SVG's aria-label. */
export function dagSummary(steps: readonly StepView[], layers: number): string {
  const counts = phaseCounts(steps).map(([phase, n]) => `${n} ${phase}`).join(', ')
  return `Dependency graph of ${steps.length} step${steps.length === 1 ? '' : 's'} in ${layers} layer${layers === 1 ? '' : 's'}${counts ? `: ${counts}` : ''}. The step table lists the same steps.`
}

const ARROW = trusted('<defs><marker id="dag-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="dag-arrowhead"/></marker></defs>')

/** Pure: an SVG path through the points: straight where one is right below the other, else an S-curve. */
export function edgePath(points: ReadonlyArray<{ x: number; y: number }>): string {
  let d = `M${points[0]!.x},${points[0]!.y}`
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!
    const b = points[i]!
    const mid = (a.y + b.y) / 2
    d += a.x === b.x ? ` L${b.x},${b.y}` : ` C${a.x},${mid} ${b.x},${mid} ${b.x},${b.y}`
  }
  return d
}

function svgOpen(width: number, height: number, label: string): Html {
  // The viewBox scales the drawing; the min width keeps labels legible (the container scrolls).
  return html`<svg class="dag" role="img" aria-label="${label}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" preserveAspectRatio="xMidYMin meet" xmlns="http://www.w3.org/2000/svg">`
}

/** Pure: every step drawn, as laid out. `steps` is the view of the same spec, in spec order. */
export function stepDagSvg(layout: StepLayout, steps: readonly StepView[], namespace: string, name: string): Html {
  const edges = layout.edges.map((e) =>
    html`<path class="dag-edge" data-from="${steps[e.from]?.name}" data-to="${steps[e.to]?.name}" d="${edgePath(edgePoints(layout, e))}" marker-end="url(#dag-arrow)"/>`)
  const nodes = layout.nodes.map((n) => {
    const s = steps[n.step]!
    return html`<a class="node-link" href="${stepHref(namespace, name, s.name)}" data-step="${s.name}"><g class="node phase-${phaseClass(s.phase)}" data-step="${s.name}" transform="translate(${n.x},${n.y})"><title>${s.name}: ${s.label}</title><rect width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="6"/><text class="node-name" x="10" y="18">${clip(s.name)}</text><text class="node-phase" x="10" y="35">${clip(s.label, 26)}</text></g></a>`
  })
  return html`${svgOpen(layout.width, layout.height, dagSummary(steps, layout.layers))}${ARROW}<g class="dag-edges">${edges}</g><g class="dag-nodes">${nodes}</g></svg>`
}

/** Where a group node's phase bar sits (the client redraws it at the same place). */
export const BAR_Y = 27
export const BAR_HEIGHT = 12

/** Pure: "180 Succeeded, 20 Running" (what a group's bar shows, in words). */
export function countsText(counts: readonly (readonly [string, number])[]): string {
  return counts.map(([p, n]) => `${n} ${p}`).join(', ')
}

/** Pure: "layer 3" or "layers 3–5" (1-based, as people count). */
export function groupTitle(first: number, last: number): string {
  return first === last ? `layer ${first + 1}` : `layers ${first + 1}\u2013${last + 1}`
}

/**
 * Pure: one node per layer group with a stacked bar of its steps' phases and the counts in
 * words ("layer 3: 200 steps — 180 Succeeded, 20 Running"); each links to the table filtered
 * to that group.
 */
export function groupDagSvg(layout: GroupLayout, steps: readonly StepView[], baseHref: string): Html {
  const edges = layout.edges.map((e) => {
    const a = layout.groups[e.from]!
    const b = layout.groups[e.to]!
    if (e.to === e.from + 1) {
      const x = a.x + GROUP_WIDTH / 2
      return html`<path class="dag-edge" d="M${x},${a.y + GROUP_HEIGHT} L${x},${b.y - 2}" marker-end="url(#dag-arrow)"/>`
    }
    // A dependency that skips groups bows out to the right so it does not cross the nodes.
    const x = a.x + GROUP_WIDTH
    const bow = x + 16 + Math.min(28, (e.to - e.from) * 4)
    return html`<path class="dag-edge dag-edge-skip" d="M${x},${a.y + GROUP_HEIGHT / 2} C${bow},${a.y + GROUP_HEIGHT / 2} ${bow},${b.y + GROUP_HEIGHT / 2} ${x + 2},${b.y + GROUP_HEIGHT / 2}" marker-end="url(#dag-arrow)"/>`
  })
  const nodes = layout.groups.map((g, index) => {
    const members = g.steps.map((i) => steps[i]!)
    const counts = phaseCounts(members)
    const title = groupTitle(g.firstLayer, g.lastLayer)
    const size = `${title}: ${members.length} step${members.length === 1 ? '' : 's'}`
    const tally = countsText(counts)
    const words = `${size} \u2014 ${tally}`
    let offset = 0
    const barWidth = GROUP_WIDTH - 20
    const segments = counts.map(([phase, n]) => {
      const w = (barWidth * n) / Math.max(1, members.length)
      const seg = html`<rect class="bar phase-${phaseClass(phase)}" data-phase="${phase}" x="${(10 + offset).toFixed(1)}" y="${BAR_Y}" width="${w.toFixed(1)}" height="${BAR_HEIGHT}"/>`
      offset += w
      return seg
    })
    return html`<a class="node-link" href="${baseHref}?group=${index}#steps" data-group="${index}"><g class="node group" data-group="${index}" transform="translate(${g.x},${g.y})"><title>${words}</title><rect class="group-box" width="${GROUP_WIDTH}" height="${GROUP_HEIGHT}" rx="6"/><text class="node-name" x="10" y="20">${clip(size, 44)}</text><g class="group-bar">${segments}</g><text class="node-phase group-counts" x="10" y="55">${clip(tally, 52)}</text></g></a>`
  })
  const label = `${dagSummary(steps, layout.layers)} Drawn as ${layout.groups.length} groups of layers.`
  return html`${svgOpen(layout.width, layout.height, label)}${ARROW}<g class="dag-edges">${edges}</g><g class="dag-nodes">${join(nodes)}</g></svg>`
}
