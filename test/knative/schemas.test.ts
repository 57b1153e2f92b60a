import { Cron } from 'croner'
import { describe, expect, it } from 'vitest'
import { featureFlaggedFields, loadCrdSchema, loadCrdValidators } from './crd-schemas.js'
import { join } from 'node:path'
import { loadManifests, ofKind, ROOT, type Manifest } from './manifests.js'

const manifests = loadManifests()
// Knative's CRDs, and ours for the one purko.io object platform/ ships (the MCPServer registering recipes-mcp).
const validators = new Map([...loadCrdValidators(), ...loadCrdValidators(join(ROOT, 'crds'))])
const CORE_KINDS = new Set([
  'v1/Namespace', 'v1/ServiceAccount', 'v1/Secret', 'rbac.authorization.k8s.io/v1/ClusterRole', 'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
  'rbac.authorization.k8s.io/v1/Role', 'rbac.authorization.k8s.io/v1/RoleBinding',
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy', 'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding',
])
const knative = manifests.filter((m) => !CORE_KINDS.has(`${m.apiVersion}/${m.kind}`))
const label = (m: Manifest) => `${m.kind} ${m.name} (${m.file})`

function errorsOf(m: Pick<Manifest, 'apiVersion' | 'kind' | 'doc'>): string[] {
  const validate = validators.get(`${m.apiVersion}/${m.kind}`)
  if (!validate) return [`no served CRD version for ${m.apiVersion} ${m.kind}`]
  return validate(m.doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`)
}

const ISO_DURATION = /^P(?!$)(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/
// The webhooks decode with unknown fields disallowed, also below the subtrees the CRD schemas
// leave open; these are the fields Knative's Go types declare there: a Trigger's spec, its delivery
// (the same shape as a Broker's) and an ApiServerSource's spec.
const TRIGGER_SPEC_FIELDS = ['broker', 'brokerRef', 'filter', 'filters', 'subscriber', 'delivery']
const DELIVERY_FIELDS = ['retry', 'backoffPolicy', 'backoffDelay', 'deadLetterSink', 'timeout', 'retryAfterMax', 'format']
const APISERVERSOURCE_SPEC_FIELDS = ['resources', 'mode', 'owner', 'serviceAccountName', 'sink', 'ceOverrides', 'namespaceSelector', 'filters']

describe("every Knative document validates against Knative's own CRD schema", () => {
  it('knative/ holds every kind the install needs', () => {
    const kinds = new Set(knative.map((m) => `${m.apiVersion}/${m.kind}`))
    expect([...kinds].sort()).toEqual([
      'eventing.knative.dev/v1/Broker',
      'eventing.knative.dev/v1/Trigger',
      'purko.io/v1alpha1/MCPServer',
      'serving.knative.dev/v1/Service',
      'sources.knative.dev/v1/ApiServerSource',
      'sources.knative.dev/v1/PingSource',
    ])
  })

  it.each(knative.map((m) => [label(m), m] as const))('%s', (_, m) => {
    expect(errorsOf(m)).toEqual([])
  })

  it('rejects a misspelled field where the schema declares the properties', () => {
    const service = structuredClone(ofKind(manifests, 'serving.knative.dev/v1', 'Service')[0]!)
    service.doc.spec.template.spec.containers[0].imagePullPolcy = 'Always'
    expect(errorsOf(service).join('\n')).toContain('must NOT have additional properties')
  })

  it('rejects a value of the wrong type', () => {
    const trigger = structuredClone(ofKind(manifests, 'eventing.knative.dev/v1', 'Trigger')[0]!)
    trigger.doc.spec.delivery.retry = 'eight'
    expect(errorsOf(trigger).join('\n')).toContain('/spec/delivery/retry must be integer')
  })
})

describe('fields only the Knative webhooks check', () => {
  const serviceSchema = loadCrdSchema('serving.knative.dev/v1/Service')

  it.each(ofKind(manifests, 'serving.knative.dev/v1', 'Service').map((m) => [m.name, m] as const))('Service %s uses no field that needs a Knative feature flag', (_, m) => {
    expect(featureFlaggedFields(serviceSchema, m.doc)).toEqual([])
  })

  it('notices a field that needs a feature flag', () => {
    const service = structuredClone(ofKind(manifests, 'serving.knative.dev/v1', 'Service')[0]!)
    service.doc.spec.template.spec.containers[0].securityContext.capabilities.add = ['NET_BIND_SERVICE']
    expect(featureFlaggedFields(serviceSchema, service.doc)).toEqual(['.spec.template.spec.containers[0].securityContext.capabilities.add'])
  })

  it.each(ofKind(manifests, 'eventing.knative.dev/v1', 'Trigger').map((m) => [m.name, m] as const))('Trigger %s uses only declared spec and delivery fields with valid durations', (_, m) => {
    expect(Object.keys(m.doc.spec).filter((k) => !TRIGGER_SPEC_FIELDS.includes(k))).toEqual([])
    expect(Object.keys(m.doc.spec.delivery).filter((k) => !DELIVERY_FIELDS.includes(k))).toEqual([])
    expect(m.doc.spec.delivery.backoffPolicy).toMatch(/^(exponential|linear)$/)
    expect(m.doc.spec.delivery.backoffDelay).toMatch(ISO_DURATION)
    expect(m.doc.spec.delivery.timeout).toMatch(ISO_DURATION)
  })

  it('the Broker delivery uses only declared fields with valid durations', () => {
    const [broker] = ofKind(manifests, 'eventing.knative.dev/v1', 'Broker')
    expect(Object.keys(broker!.doc.spec.delivery).filter((k) => !DELIVERY_FIELDS.includes(k))).toEqual([])
    expect(broker!.doc.spec.delivery.backoffDelay).toMatch(ISO_DURATION)
    expect(broker!.doc.spec.delivery.timeout).toMatch(ISO_DURATION)
  })

  it.each(ofKind(manifests, 'sources.knative.dev/v1', 'ApiServerSource').map((m) => [m.name, m] as const))('ApiServerSource %s has a mode the webhook accepts and no unknown spec field', (_, m) => {
    expect(Object.keys(m.doc.spec).filter((k) => !APISERVERSOURCE_SPEC_FIELDS.includes(k))).toEqual([])
    expect(m.doc.spec.mode).toBe('Resource')
  })

  it('the duration pattern accepts what Knative writes and rejects malformed values', () => {
    expect(['PT0.5S', 'PT60S', 'PT1M30S', 'P1D'].filter((v) => !ISO_DURATION.test(v))).toEqual([])
    expect(['0.5s', 'PT', 'P', '60', 'PT1.S'].filter((v) => ISO_DURATION.test(v))).toEqual([])
  })

  it.each(ofKind(manifests, 'sources.knative.dev/v1', 'PingSource').map((m) => [m.name, m] as const))('PingSource %s has a five-field cron schedule and a JSON object as data', (_, m) => {
    expect(String(m.doc.spec.schedule).trim().split(/\s+/)).toHaveLength(5)
    expect(new Cron(m.doc.spec.schedule, { paused: true }).nextRun()).toBeInstanceOf(Date)
    expect(m.doc.spec.contentType).toBe('application/json')
    // With contentType application/json the webhook requires data to be a JSON object.
    const data: unknown = JSON.parse(m.doc.spec.data)
    expect(data !== null && typeof data === 'object' && !Array.isArray(data)).toBe(true)
  })
})

describe('core kinds carry the fields they need', () => {
  const roles = new Set(ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'ClusterRole').map((m) => m.name))
  const accounts = new Set(ofKind(manifests, 'v1', 'ServiceAccount').map((m) => `${m.namespace}/${m.name}`))

  it('the kinetic-system Namespace exists and every namespaced object is in it', () => {
    // kinetic-system for Kinetic itself; purko's two namespaces (the agent and platform ones) and
    // the two recipe target namespaces, where rights are granted.
    expect(ofKind(manifests, 'v1', 'Namespace').map((m) => m.name).sort()).toEqual(['ai-agents', 'kinetic-system', 'mcp-server', 'purko-system', 'sandbox-recipes'])
    const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'])
    // Rights held only in one namespace (the mcp-servers registry of the agent namespace, recipe children, say) are granted there.
    const grantedThere = (m: Manifest) => (m.kind === 'Role' || m.kind === 'RoleBinding') && ['ai-agents', 'purko-system', 'mcp-server', 'sandbox-recipes'].includes(m.namespace ?? '')
    // And the registration of the recipes MCP server, which the agents of ai-agents use.
    const registersRecipesMcp = (m: Manifest) => m.file === 'platform/recipes-mcp.yaml' && m.namespace === 'ai-agents'
    const misplaced = manifests.filter((m) => !clusterScoped.has(m.kind) && m.namespace !== 'kinetic-system' && !grantedThere(m) && !registersRecipesMcp(m))
    expect(misplaced.map(label)).toEqual([])
    const namespacedCluster = manifests.filter((m) => clusterScoped.has(m.kind) && m.namespace !== undefined)
    expect(namespacedCluster.map(label)).toEqual([])
  })

  it('every object has a DNS-label name and no two objects of a kind share one', () => {
    for (const m of manifests) expect(m.name, label(m)).toMatch(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/)
    const keys = manifests.map((m) => `${m.kind}/${m.namespace ?? ''}/${m.name}`)
    expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([])
  })

  it.each(ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'ClusterRole').map((m) => [m.name, m] as const))('ClusterRole %s has complete rules', (_, m) => {
    expect(m.doc.rules.length).toBeGreaterThan(0)
    for (const rule of m.doc.rules) {
      expect(Object.keys(rule).filter((k) => k !== 'resourceNames').sort()).toEqual(['apiGroups', 'resources', 'verbs'])
      for (const key of ['apiGroups', 'resources', 'verbs']) expect(rule[key].length, `${m.name} ${key}`).toBeGreaterThan(0)
    }
  })

  it.each(ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'ClusterRoleBinding').map((m) => [m.name, m] as const))('ClusterRoleBinding %s binds a ClusterRole and a ServiceAccount defined in knative/', (_, m) => {
    expect(m.doc.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: m.doc.roleRef.name })
    expect(roles.has(m.doc.roleRef.name)).toBe(true)
    expect(m.doc.subjects.length).toBeGreaterThan(0)
    for (const s of m.doc.subjects) {
      expect(s.kind).toBe('ServiceAccount')
      expect(accounts.has(`${s.namespace}/${s.name}`), `${s.namespace}/${s.name}`).toBe(true)
    }
  })

  it('every ServiceAccount a Service or source runs as is defined in knative/', () => {
    const used = [
      ...ofKind(manifests, 'serving.knative.dev/v1', 'Service').map((m) => `${m.namespace}/${m.doc.spec.template.spec.serviceAccountName}`),
      ...ofKind(manifests, 'sources.knative.dev/v1', 'ApiServerSource').map((m) => `${m.namespace}/${m.doc.spec.serviceAccountName}`),
    ]
    expect(used.filter((a) => !accounts.has(a))).toEqual([])
  })
})
