import { describe, expect, it } from 'vitest'
import { evaluatePolicies, type NamespaceLabels, type RecipeInput, type RenderedInput, type RenderedWorkloadInput } from '../../shared/recipe/plan/policy.js'
import { podSecurityLevel, podSecurityViolations } from '../../shared/recipe/plan/pod-security.js'

const LEVEL = 'pod-security.kubernetes.io/enforce'
const ns: NamespaceLabels = {
  'mcp-server': { [LEVEL]: 'baseline', 'pod-security.kubernetes.io/warn': 'restricted' },
  'sandbox-recipes': { [LEVEL]: 'restricted' },
  open: { [LEVEL]: 'privileged' },
}
const workload = (name: string, namespace: string, caps: string[], extra: Partial<RenderedWorkloadInput> = {}): RenderedWorkloadInput => ({
  name, kind: 'Deployment', image: 'nginx:1.27', namespace, security: { addCapabilities: caps }, ...extra,
})
const recipeOf = (rendered: RenderedInput): RecipeInput => ({
  metadata: { name: 'shop', namespace: 'team-a' },
  spec: { workloads: rendered.workloads.map((w) => ({ name: w.name })), tests: (rendered.tests ?? []).map((t) => ({ name: t.name })) },
})

describe('the built-in Pod Security check (spec §10.6)', () => {
  it.each<[string, string, string[], string[]]>([
    ['restricted admits NET_BIND_SERVICE', 'sandbox-recipes', ['NET_BIND_SERVICE'], []],
    ['restricted refuses every other added capability, each named', 'sandbox-recipes', ['CHOWN', 'NET_BIND_SERVICE', 'SETUID'], [
      'workload "web": capability CHOWN is not admitted by Pod Security level "restricted" of namespace "sandbox-recipes"',
      'workload "web": capability SETUID is not admitted by Pod Security level "restricted" of namespace "sandbox-recipes"',
    ]],
    ['baseline admits the whole capability enum', 'mcp-server', ['CHOWN', 'DAC_OVERRIDE', 'SETUID', 'SYS_CHROOT'], []],
    ['privileged admits everything', 'open', ['KILL'], []],
    ['an unlabelled namespace is privileged', 'elsewhere', ['KILL'], []],
  ])('%s', (_name, namespace, caps, expected) => {
    const rendered: RenderedInput = { workloads: [workload('web', namespace, caps)] }
    expect(podSecurityViolations(recipeOf(rendered), rendered, ns).map((v) => v.message)).toEqual(expected)
  })

  it('reads the enforce label only (warn and audit do not reject)', () => {
    expect(podSecurityLevel(ns, 'mcp-server')).toBe('baseline')
    expect(podSecurityLevel(ns, 'nowhere')).toBe('privileged')
  })

  it('checks each subject against its own target namespace: an MCP workload and a test too', () => {
    const rendered: RenderedInput = {
      workloads: [workload('db', 'sandbox-recipes', ['CHOWN']), workload('github', 'mcp-server', ['CHOWN'], { transport: 'stdio' })],
      tests: [{ name: 'smoke', image: 'curl', namespace: 'sandbox-recipes', security: { addCapabilities: ['KILL'] } }],
    }
    expect(podSecurityViolations(recipeOf(rendered), rendered, ns)).toEqual([
      { policy: 'pod-security', mode: 'Enforce', rule: 'capabilities.podSecurity', workload: 'db', message: 'workload "db": capability CHOWN is not admitted by Pod Security level "restricted" of namespace "sandbox-recipes"' },
      { policy: 'pod-security', mode: 'Enforce', rule: 'capabilities.podSecurity', test: 'smoke', message: 'test "smoke": capability KILL is not admitted by Pod Security level "restricted" of namespace "sandbox-recipes"' },
    ])
  })

  it('rejects like an Enforce policy with no WorkflowRecipePolicy at all', () => {
    const rendered: RenderedInput = { workloads: [workload('web', 'sandbox-recipes', ['SETGID'])] }
    const out = evaluatePolicies(recipeOf(rendered), rendered, undefined, [], ns)
    expect(out).toMatchObject({ rejected: true, compliant: false, reason: 'PolicyViolation', evaluated: [] })
    expect(out.message).toBe('Rejected by policy: pod-security: capabilities.podSecurity: workload "web": capability SETGID is not admitted by Pod Security level "restricted" of namespace "sandbox-recipes"')
  })

  it('sorts among the policies as one named pod-security', () => {
    const rendered: RenderedInput = { workloads: [workload('web', 'sandbox-recipes', ['SETGID'])] }
    const forbid = { mode: 'Audit' as const, security: { forbiddenCapabilities: ['SETGID'] } }
    const out = evaluatePolicies(recipeOf(rendered), rendered, undefined, [
      { metadata: { name: 'production' }, spec: forbid }, { metadata: { name: 'baseline' }, spec: forbid },
    ], ns)
    expect(out.violations.map((v) => v.policy)).toEqual(['baseline', 'pod-security', 'production'])
    expect(out.message).toMatch(/^Rejected by policy: pod-security: /)
  })
})
