import { describe, expect, it } from 'vitest'
import { topologicalOrder, validateSteps } from '../../shared/workflow/plan/dag.js'
import type { WorkflowStep } from '../../shared/schemas/workflow.js'
import { aChain, aStep } from '../fixtures/workflows.js'

const names = (steps: WorkflowStep[], order: number[] | null) => order?.map((i) => steps[i]!.name) ?? null

describe('validateSteps', () => {
  it.each<[string, WorkflowStep[], string[]]>([
    ['a single step', [aStep('a')], []],
    ['a chain', aChain(5), []],
    ['a diamond', [aStep('a'), aStep('b', { dependsOn: ['a'] }), aStep('c', { dependsOn: ['a'] }), aStep('d', { dependsOn: ['b', 'c'] })], []],
    ['a dependency declared after its dependent', [aStep('b', { dependsOn: ['a'] }), aStep('a')], []],
    ['a type-only step', [aStep('notify', { agentRef: undefined, type: 'notification' })], []],
    ['an unknown dependency', [aStep('a', { dependsOn: ['ghost'] })], ['UnknownDependency']],
    ['a self-dependency', [aStep('a', { dependsOn: ['a'] })], ['SelfDependency']],
    ['a duplicate step name', [aStep('a'), aStep('a')], ['DuplicateStep']],
    ['a step with neither agent nor type', [aStep('a', { agentRef: undefined })], ['MissingExecutor']],
    ['a step whose agentRef has an empty name', [aStep('a', { agentRef: { name: '' } })], ['MissingExecutor']],
    ['inputFrom a step that does not exist', [aStep('a', { inputFrom: [{ step: 'ghost', outputKey: 'x' }] })], ['UnknownInputStep']],
    ['a two-step cycle', [aStep('a', { dependsOn: ['b'] }), aStep('b', { dependsOn: ['a'] })], ['DependencyCycle']],
    ['a cycle behind a valid prefix', [aStep('a'), aStep('b', { dependsOn: ['a', 'd'] }), aStep('c', { dependsOn: ['b'] }), aStep('d', { dependsOn: ['c'] })], ['DependencyCycle']],
  ])('reports %s as %j', (_, steps, reasons) => {
    expect(validateSteps(steps).map((i) => i.reason)).toEqual(reasons)
  })

  it.each<[string, WorkflowStep[], string]>([
    ['an unknown dependency', [aStep('deploy', { dependsOn: ['build'] })], 'WF-003: step "deploy" depends on non-existent step "build"'],
    ['a self-dependency', [aStep('a', { dependsOn: ['a'] })], 'WF-003: step "a" cannot depend on itself'],
    ['a duplicate step name', [aStep('a'), aStep('a')], 'WF-002: duplicate step name: "a"'],
    ['a cycle', [aStep('a', { dependsOn: ['b'] }), aStep('b', { dependsOn: ['a'] })], 'WF-004: dependency cycle detected among steps'],
  ])('words %s the way purko does', (_, steps, message) => {
    expect(validateSteps(steps)[0]?.message).toBe(message)
  })
})

describe('topologicalOrder', () => {
  it.each<[string, WorkflowStep[], string[] | null]>([
    ['keeps spec order for independent steps', [aStep('c'), aStep('a'), aStep('b')], ['c', 'a', 'b']],
    ['puts a dependency before its dependent even when declared later', [aStep('b', { dependsOn: ['a'] }), aStep('a')], ['a', 'b']],
    ['prefers spec order among steps that become ready together', [
      aStep('root'), aStep('z', { dependsOn: ['root'] }), aStep('y', { dependsOn: ['root'] }), aStep('x'),
    ], ['root', 'z', 'y', 'x']],
    ['orders a diamond', [
      aStep('d', { dependsOn: ['b', 'c'] }), aStep('c', { dependsOn: ['a'] }), aStep('b', { dependsOn: ['a'] }), aStep('a'),
    ], ['a', 'c', 'b', 'd']],
    ['counts a repeated dependency once', [aStep('a'), aStep('b', { dependsOn: ['a', 'a'] })], ['a', 'b']],
    ['returns null for a cycle', [aStep('a', { dependsOn: ['c'] }), aStep('b', { dependsOn: ['a'] }), aStep('c', { dependsOn: ['b'] })], null],
  ])('%s', (_, steps, expected) => {
    expect(names(steps, topologicalOrder(steps))).toEqual(expected)
  })

  it('gives the same order every time', () => {
    const steps = [aStep('e', { dependsOn: ['a'] }), aStep('a'), aStep('d', { dependsOn: ['a'] }), aStep('c'), aStep('b', { dependsOn: ['c'] })]
    const first = topologicalOrder(steps)
    expect(first).not.toBeNull()
    for (let i = 0; i < 5; i++) expect(topologicalOrder(steps)).toEqual(first)
  })

  it('orders a 10,000-step chain declared in reverse', () => {
    const steps = aChain(10_000).reverse()
    const order = topologicalOrder(steps)
    expect(order?.length).toBe(10_000)
    expect(steps[order![0]!]!.name).toBe('s1')
    expect(steps[order![9_999]!]!.name).toBe('s10000')
  })
})
