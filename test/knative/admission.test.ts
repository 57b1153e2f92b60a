// spec §12: the ValidatingAdmissionPolicy kinetic-workflowrecipes and its binding are
// shipped in knative/ and say what the spec says. The real API server judges the CEL itself
// in test/cluster/recipe-admission.test.ts; these checks keep the shape from drifting.
import { describe, expect, it } from 'vitest'
import { loadManifests, ofKind } from './manifests.js'

const manifests = loadManifests()
const API = 'admissionregistration.k8s.io/v1'
const policies = ofKind(manifests, API, 'ValidatingAdmissionPolicy')
const bindings = ofKind(manifests, API, 'ValidatingAdmissionPolicyBinding')
const policy = policies.find((m) => m.name === 'kinetic-workflowrecipes')!
const spec = policy.doc.spec as {
  failurePolicy: string
  matchConstraints: { resourceRules: Array<Record<string, string[]>> }
  variables: Array<{ name: string; expression: string }>
  validations: Array<{ expression: string; messageExpression: string; reason?: string }>
}
const variable = (name: string) => spec.variables.find((v) => v.name === name)?.expression ?? ''

type Spec = typeof spec
const SHIPPED: Array<[string, string, string]> = [
  ['kinetic-workflowrecipes', 'admission/recipes.yaml', 'workflowrecipes'],
  ['kinetic-agents', 'admission/agents.yaml', 'agents'],
  ['kinetic-workflows', 'admission/workflows.yaml', 'workflows'],
  ['kinetic-mcpservers', 'admission/mcpservers.yaml', 'mcpservers'],
]

/** The variables an expression uses, with the variables those use, transitively. */
function usedVariables(s: Spec, expression: string, seen = new Set<string>()): Set<string> {
  for (const [, name] of expression.matchAll(/variables\.(\w+)/g)) {
    if (seen.has(name!)) continue
    seen.add(name!)
    usedVariables(s, s.variables.find((v) => v.name === name)?.expression ?? '', seen)
  }
  return seen
}

describe('the admission policies are shipped', () => {
  it('one ValidatingAdmissionPolicy and one binding per kind whose author Kinetic cannot see (GA admissionregistration.k8s.io/v1)', () => {
    const byName = (a: string[], b: string[]) => a[0]!.localeCompare(b[0]!)
    const want = SHIPPED.map(([name, file]) => [name, file]).sort(byName)
    expect(policies.map((m) => [m.name, m.file]).sort(byName)).toEqual(want)
    expect(bindings.map((m) => [m.name, m.file]).sort(byName)).toEqual(want)
  })

  it.each(SHIPPED)('%s: the binding denies (no audit or warn only) and binds the whole policy; it fails closed on CREATE and UPDATE of its kind only', (name, _file, resource) => {
    expect(bindings.find((b) => b.name === name)!.doc.spec).toEqual({ policyName: name, validationActions: ['Deny'] })
    const s = policies.find((p) => p.name === name)!.doc.spec as Spec
    expect(s.failurePolicy).toBe('Fail')
    expect(s.matchConstraints.resourceRules).toEqual([{ apiGroups: ['purko.io'], apiVersions: ['v1alpha1'], operations: ['CREATE', 'UPDATE'], resources: [resource] }])
    expect(s.validations.every((v) => v.reason === 'Forbidden')).toBe(true)
  })

  it.each(SHIPPED)('%s: no message uses authorizer or a variable built on it, and no expression makes more than two authorizer checks (kube-apiserver\'s cost limit of one expression)', (name) => {
    const s = policies.find((p) => p.name === name)!.doc.spec as Spec
    const checks = (expression: string) => (expression.match(/\.check\(/g) ?? []).length
    const authz = new Set(s.variables.filter((v) => checks(v.expression) > 0).map((v) => v.name))
    for (const v of s.validations) {
      expect(v.messageExpression).not.toMatch(/\bauthorizer\b/)
      for (const used of usedVariables(s, v.messageExpression)) expect(authz.has(used), `${v.messageExpression} uses ${used}`).toBe(false)
      const total = checks(v.expression) + [...usedVariables(s, v.expression)].reduce((n, u) => n + checks(s.variables.find((x) => x.name === u)!.expression), 0)
      expect(total, v.expression).toBeLessThanOrEqual(2)
    }
  })

  it.each(SHIPPED)('%s: every variable is defined before it is used', (name) => {
    const s = policies.find((p) => p.name === name)!.doc.spec as Spec
    s.variables.forEach((v, i) => {
      const used = [...v.expression.matchAll(/variables\.(\w+)/g)].map((m) => m[1])
      const earlier = s.variables.slice(0, i).map((e) => e.name)
      expect(used.filter((u) => !earlier.includes(u!)), v.name).toEqual([])
    })
  })
})

describe('the spec §12 admission policy of recipes', () => {

  it('fails closed and matches CREATE and UPDATE of purko.io/v1alpha1 workflowrecipes only: not the status subresource, not DELETE', () => {
    expect(spec.failurePolicy).toBe('Fail')
    expect(spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: ['purko.io'], apiVersions: ['v1alpha1'], operations: ['CREATE', 'UPDATE'], resources: ['workflowrecipes'] },
    ])
    expect(policy.doc.spec).not.toHaveProperty('paramKind')
  })

  it('checks Secret references only when the spec changed, from workloads[].envSecret, tests[].envSecret and workloads[].mcp.tokenSecret', () => {
    expect(variable('specChanged')).toBe('oldObject == null || object.spec != oldObject.spec')
    const names = variable('secretNames')
    expect(names.startsWith('!variables.specChanged ? [] :')).toBe(true)
    for (const source of ['w.?envSecret', 't.?envSecret', 'object.spec.?tests', 'w.mcp.tokenSecret.secretName']) expect(names).toContain(source)
    expect(variable('allSecrets').replace(/\s+/g, ' ')).toBe(
      "size(variables.secretNames) == 0 || authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()",
    )
  })

  it('has the three rules of spec §12 in order, each with the spec\'s message (the first as four name slots, two authorizer checks at most each)', () => {
    const secrets = "request.userInfo.username + ' may not get every Secret that envSecret or mcp.tokenSecret names in namespace ' + object.metadata.namespace"
    const slot = (i: number) => `variables.allSecrets || size(variables.secretNames) <= ${i} ||${i > 0 ? ` variables.secretNames.indexOf(variables.secretNames[${i}]) < ${i} ||` : ''} authorizer.group('').resource('secrets').namespace(object.metadata.namespace).name(variables.secretNames[${i}]).check('get').allowed()`
    expect(spec.validations.map((v) => [v.expression.replace(/\s+/g, ' '), v.messageExpression.replace(/\s+/g, ' ')])).toEqual([
      ['variables.allSecrets || variables.secretNames.all(n, variables.secretNames.indexOf(n) < 4)', secrets],
      ...[0, 1, 2, 3].map((i) => [slot(i), secrets]),
      ["!variables.decisionChanged || authorizer.group('purko.io').resource('workflowrecipes').namespace(object.metadata.namespace).name(object.metadata.name).check('approve').allowed()",
        "'user ' + request.userInfo.username + ' may not approve or reject WorkflowRecipe ' + object.metadata.name"],
      ["!variables.approverChanged || variables.annotations['purko.io/approved-by'] == request.userInfo.username",
        "'purko.io/approved-by must be the requesting user (' + request.userInfo.username + ')'"],
    ])
  })

  it('acts only when purko.io/approve, purko.io/reject or purko.io/approved-by is added or changed', () => {
    expect(variable('decisionChanged')).toContain("['purko.io/approve', 'purko.io/reject'].exists(k")
    expect(variable('decisionChanged')).toContain('variables.oldAnnotations[k] != variables.annotations[k]')
    expect(variable('approverChanged')).toContain("variables.oldAnnotations['purko.io/approved-by'] != variables.annotations['purko.io/approved-by']")
  })

  it('no message uses authorizer or a variable built on it (the API server refuses that)', () => {
    const authz = new Set<string>()
    for (const v of spec.variables) {
      if (/\bauthorizer\b/.test(v.expression) || [...authz].some((a) => v.expression.includes(`variables.${a}`))) authz.add(v.name)
    }
    expect([...authz]).toEqual(['allSecrets'])
    for (const v of spec.validations) {
      expect(v.messageExpression).not.toMatch(/\bauthorizer\b/)
      for (const a of authz) expect(v.messageExpression).not.toContain(`variables.${a}`)
    }
  })

  it('every variable is defined before it is used', () => {
    spec.variables.forEach((v, i) => {
      const used = [...v.expression.matchAll(/variables\.(\w+)/g)].map((m) => m[1])
      const earlier = spec.variables.slice(0, i).map((e) => e.name)
      expect(used.filter((u) => !earlier.includes(u!)), v.name).toEqual([])
    })
  })
})
