// No two modules of the product import each other, directly or round a longer loop: a module's
// dependencies can be read without reading its dependents.
import { describe, expect, it } from 'vitest'
import { importGraph, importsOf } from '../support/import-graph.js'

/** Pure: the strongly connected groups of more than one module (each one a loop of imports). */
export function importLoops(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const loops: string[][] = []
  const visit = (v: string): void => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = []
      for (;;) {
        const w = stack.pop()!
        onStack.delete(w)
        group.push(w)
        if (w === v) break
      }
      if (group.length > 1) loops.push(group.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return loops
}

describe('the import graph', () => {
  it('finds a loop when there is one, and none in a chain', () => {
    expect(importLoops(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']])
    expect(importLoops(new Map([['a', ['b']], ['b', ['c']], ['c', []]]))).toEqual([])
    expect(importsOf("// import { x } from './commented.js'\nimport type { A } from './a.js'\nexport { b } from '../b.js'\nconst m = import('./lazy.js')\nimport { z } from 'zod'"))
      .toEqual(['./a.js', '../b.js', './lazy.js'])
  })

  it('has no loop among the product\'s modules', () => {
    const graph = importGraph()
    expect(graph.size).toBeGreaterThan(300)
    expect(importLoops(graph)).toEqual([])
  })
})
