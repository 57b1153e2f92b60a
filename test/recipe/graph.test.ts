// spec §3.2, §7.11, §8.2: unknown dependencies and cycles over every declared workload or
// step; Kahn's order of the included workloads, excluded dependencies counting as satisfied.
import { describe, expect, it } from 'vitest'
import { checkGraph, topologicalOrder } from '../../shared/recipe/plan/graph.js'

const g = (spec: Record<string, string[]>) => Object.entries(spec).map(([name, dependsOn]) => ({ name, dependsOn }))

describe('dependency graph (spec §8.2)', () => {
  it.each([
    [{ web: ['db'], db: [] }, []],
    [{ web: ['dbb'] }, ['workload "web" depends on unknown workload "dbb"']],
    [{ a: ['b'], b: ['a'] }, ['dependency cycle: a -> b -> a']],
    [{ web: ['migrate'], migrate: ['db'], db: ['web'] }, ['dependency cycle: db -> web -> migrate -> db']],
    [{ z: ['y'], y: ['z'], b: ['c'], c: ['b'] }, ['dependency cycle: b -> c -> b', 'dependency cycle: y -> z -> y']],
    [{ a: ['a'] }, ['dependency cycle: a -> a']],
    [{ a: ['b', 'x'], b: ['c'], c: ['a', 'b'] }, ['workload "a" depends on unknown workload "x"', 'dependency cycle: a -> b -> c -> a']],
  ])('%j', (spec, messages) => {
    expect(checkGraph(g(spec), 'workload').map((e) => e.message)).toEqual(messages)
  })

  it('words step errors as steps', () => {
    expect(checkGraph(g({ draft: ['research'], research: ['draft'], review: ['nope'] }), 'step')).toEqual([
      { reason: 'UnknownDependency', message: 'step "review" depends on unknown step "nope"', field: 'spec.steps[review].dependsOn' },
      { reason: 'DependencyCycle', message: 'step dependency cycle: draft -> research -> draft', field: 'spec.steps[draft].dependsOn' },
    ])
  })

  it('reports a cycle among workloads a profile excludes (validation covers every declared workload)', () => {
    // topologicalOrder only sees included ones; checkGraph is given all of them.
    expect(checkGraph(g({ a: ['b'], b: ['a'], c: [] }), 'workload')).toHaveLength(1)
  })
})

describe('topological order (spec §7.11)', () => {
  it.each([
    [{ web: ['db'], db: [] }, ['web', 'db'], ['db', 'web']],
    [{ db: [], cache: [], migrate: ['db'], web: ['migrate', 'cache'] }, ['db', 'migrate', 'web'], ['db', 'migrate', 'web']],
    [{ db: [], cache: [], migrate: ['db'], web: ['migrate', 'cache'] }, ['db', 'cache', 'migrate', 'web'], ['db', 'cache', 'migrate', 'web']],
    [{ c: ['a'], b: [], a: [] }, ['a', 'b', 'c'], ['b', 'a', 'c']],
    [{ x: ['y'], y: [], z: ['x'] }, ['x', 'z'], ['x', 'z']],
  ])('%j with %j included gives %j', (spec, included, order) => {
    expect(topologicalOrder(g(spec), new Set(included))).toEqual(order)
  })
})
