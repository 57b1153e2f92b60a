import type { Selector } from '../selectors.js'

/**
 * The store's label index: group-resource → label (`key` and `key=value`) → namespace → names.
 * A list by label selector takes its candidates here: step-job-finished's pod and Job lists
 * would otherwise scan every pod and Job of the namespace, which at 10,000 steps was a third
 * of this process's time.
 */
export class LabelIndex {
  private readonly byResource = new Map<string, Map<string, Map<string, Set<string>>>>()

  /** Indexes an object under each of its labels. */
  add(gr: string, ns: string, name: string, labels: Record<string, string> | undefined): void {
    this.change(gr, ns, name, labels, true)
  }

  /** Takes an object out from under the labels it was indexed with. */
  remove(gr: string, ns: string, name: string, labels: Record<string, string> | undefined): void {
    this.change(gr, ns, name, labels, false)
  }

  /** Forgets a whole resource (its CRD is gone). */
  drop(gr: string): void {
    this.byResource.delete(gr)
  }

  /**
   * The names (by namespace) that can match a label selector, from the smallest index entry its
   * requirements name; undefined when no requirement narrows it (a scan is needed).
   */
  candidates(gr: string, ns: string | undefined, label: Selector): Map<string, Iterable<string>> | undefined {
    if (!label.needs?.length) return undefined
    const index = this.byResource.get(gr)
    let best: Map<string, string[] | Set<string>> | undefined
    let bestSize = Infinity
    for (const need of label.needs) {
      const entries = need.values ? need.values.map((v) => `${need.key}=${v}`) : [need.key]
      const byNs = new Map<string, string[] | Set<string>>()
      let size = 0
      for (const entry of entries) {
        const names = index?.get(entry)
        if (!names) continue
        for (const [nsKey, set] of names) {
          if (ns !== undefined && nsKey !== ns) continue
          size += set.size
          const had = byNs.get(nsKey)
          // One label has one value, so the sets of `in (a, b)` never overlap.
          byNs.set(nsKey, had ? [...had, ...set] : set)
        }
      }
      if (size < bestSize) {
        best = byNs
        bestSize = size
      }
    }
    return best
  }

  private change(gr: string, ns: string, name: string, labels: Record<string, string> | undefined, add: boolean): void {
    if (!labels) return
    let index = this.byResource.get(gr)
    if (!index) this.byResource.set(gr, (index = new Map()))
    for (const [k, v] of Object.entries(labels)) {
      for (const entry of [k, `${k}=${v}`]) {
        let byNs = index.get(entry)
        if (!byNs) {
          if (!add) continue
          index.set(entry, (byNs = new Map()))
        }
        let names = byNs.get(ns)
        if (!names) {
          if (!add) continue
          byNs.set(ns, (names = new Set()))
        }
        if (add) names.add(name)
        else {
          names.delete(name)
          if (names.size === 0) byNs.delete(ns)
          if (byNs.size === 0) index.delete(entry)
        }
      }
    }
  }
}
