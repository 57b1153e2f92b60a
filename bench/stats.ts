// The figures every benchmark prints: medians, nearest-rank percentiles, aligned tables.

/** The middle value; for an even count, the mean of the two middle values. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The value at rank ceil(p/100 × n) of the sorted values (nearest rank; with 10 values p95 is the largest); NaN for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1]!
}

/** Prints a titled table with columns padded to their widest cell, then a blank line. */
export function printTable(title: string, head: string[], body: string[][]): void {
  console.log(title)
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] as string).length)))
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')
  console.log(line(head))
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
  for (const r of body) console.log(line(r))
  console.log('')
}
