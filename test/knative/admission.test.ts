// Recipes CONTRACT §12: the ValidatingAdmissionPolicy kinetic-workflowrecipes and its binding are
// shipped in knative/ and say what the contract says. The real API server judges the CEL itself
// in test/cluster/recipe-admission.test.ts; these checks keep the shape from drifting.
import { describe, expect, it } from 'vitest'
import { loadManifests, ofKind } from './manifests.js'

const manifests = loadManifests()
const API = 'admissionregistration.k8s.io/v1'
const policies = ofKind(manifests, API, 'ValidatingAdmissionPolicy')
const bindings = ofKind(manifests, API, 'ValidatingAdmissionPolicyBinding')
const policy = policies[0]!
const spec = policy.doc.spec as {
  failurePolicy: string
  matchConstraints: { resourceRules: Array<Record<string, string[]>> }
  variables: Array<{ name: string; expression: string }>
  validations: Array<{ expression: string; messageExpression: string; reason?: string }>
}
const variable = (name: string) => spec.variables.find((v) => v.name === name)?.expression ?? ''

describe('the §12 admission policy is shipped', () => {
  it('as one ValidatingAdmissionPolicy and one binding, kinetic-workflowrecipes, in knative/admission/recipes.yaml (GA admissionregistration.k8s.io/v1)', () => {
    expect(policies.map((m) => [m.name, m.file])).toEqual([['kinetic-workflowrecipes', 'admission/recipes.yaml']])
    expect(bindings.map((m) => [m.name, m.file])).toEqual([['kinetic-workflowrecipes', 'admission/recipes.yaml']])
  })

  it('the binding denies (no audit or warn only) and binds the whole policy with no parameters or narrower match', () => {
    expect(bindings[0]!.doc.spec).toEqual({ policyName: 'kinetic-workflowrecipes', validationActions: ['Deny'] })
  })

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
  })

  it('asks once whether the user may get every Secret, and otherwise checks each of up to 8 different names by name', () => {
    const flat = (name: string) => variable(name).replace(/\s+/g, ' ')
    const secrets = "authorizer.group('').resource('secrets').namespace(object.metadata.namespace)"
    expect(flat('mayGetSecrets')).toBe(`size(variables.secretNames) == 0 || ${secrets}.check('get').allowed()`)
    expect(flat('secret0')).toBe("variables.mayGetSecrets ? '' : variables.secretNames.min()")
    for (let i = 1; i < 8; i++) {
      expect(flat(`secret${i}`)).toBe(`variables.secret${i - 1} == '' || !variables.secretNames.exists(n, n > variables.secret${i - 1}) ? '' : variables.secretNames.filter(n, n > variables.secret${i - 1}).min()`)
    }
    expect(flat('moreThanEightSecrets')).toBe("variables.secret7 != '' && variables.secretNames.exists(n, n > variables.secret7)")
    for (const [a, b] of [[0, 1], [2, 3], [4, 5], [6, 7]]) {
      expect(flat(`deniedSecrets${a}${b}`)).toBe(`[variables.secret${a}, variables.secret${b}].filter(n, n != '' && !${secrets}.name(n).check('get').allowed())`)
    }
  })

  it('makes at most two authorization checks in any one expression (each costs 350,000 of the 1,000,000 an expression may spend)', () => {
    for (const e of [...spec.variables.map((v) => v.expression), ...spec.validations.map((v) => v.expression)]) {
      expect((e.match(/\.check\(/g) ?? []).length, e).toBeLessThanOrEqual(2)
    }
  })

  it('has the three rules of §12 in order, each with the contract\'s message (rule 1 after its limit of 8 different Secrets by name)', () => {
    expect(spec.validations.map((v) => [v.expression.replace(/\s+/g, ' '), v.messageExpression.replace(/\s+/g, ' ')])).toEqual([
      ['!variables.moreThanEightSecrets',
        "request.userInfo.username + ' may not get every Secret of namespace ' + object.metadata.namespace + ', so a recipe may name at most 8 different Secrets in envSecret and mcp.tokenSecret'"],
      ['size(variables.deniedSecrets01) + size(variables.deniedSecrets23) + size(variables.deniedSecrets45) + size(variables.deniedSecrets67) == 0',
        "request.userInfo.username + ' may not get every Secret that envSecret or mcp.tokenSecret names in namespace ' + object.metadata.namespace"],
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
    expect([...authz]).toEqual([
      'mayGetSecrets', ...Array.from({ length: 8 }, (_, i) => `secret${i}`), 'moreThanEightSecrets',
      'deniedSecrets01', 'deniedSecrets23', 'deniedSecrets45', 'deniedSecrets67',
    ])
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
