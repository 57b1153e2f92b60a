import { describe, expect, it } from 'vitest'
import { functionNames, loadManifests, ofKind } from './manifests.js'
import { selectorMatches, type LabelSelector } from '../../local/knative/label-selector.js'
import { STEP_JOB_SHARDS, stepJobShard } from '../../shared/workflow/plan/job-shard.js'

const manifests = loadManifests()
const services = ofKind(manifests, 'serving.knative.dev/v1', 'Service')
const triggers = ofKind(manifests, 'eventing.knative.dev/v1', 'Trigger')
const sources = [
  ...ofKind(manifests, 'sources.knative.dev/v1', 'ApiServerSource'),
  ...ofKind(manifests, 'sources.knative.dev/v1', 'PingSource'),
]
const serviceNames = new Set(services.map((m) => m.name))
/**
 * Functions no Trigger subscribes to: the sink of the delivery machinery itself, and the recipes
 * MCP server, which MCP clients call over HTTP (spec §14.1).
 */
const WITHOUT_TRIGGER = new Set(['dead-letter', 'recipes-mcp', 'webhook-trigger', 'run-control', 'console'])
/**
 * Services reachable from outside the cluster: the webhook trigger, which senders on the internet
 * call, and the console, which people open in a browser (reading with their own rights).
 */
const PUBLIC = new Set(['webhook-trigger', 'console'])
const DIALECTS = ['exact', 'prefix', 'suffix', 'all', 'any', 'not', 'cesql']

type Filter = Record<string, any>

/** The leaf (attribute, value) pairs of a filters list, failing on any malformed element. */
function leaves(filters: Filter[]): Array<{ dialect: string; attribute: string; value: unknown }> {
  return filters.flatMap((f) => {
    const dialects = Object.keys(f)
    expect(dialects, JSON.stringify(f)).toHaveLength(1)
    const dialect = dialects[0]!
    expect(DIALECTS).toContain(dialect)
    if (dialect === 'all' || dialect === 'any') return leaves(f[dialect])
    if (dialect === 'not') return leaves([f.not])
    if (dialect === 'cesql') return [{ dialect, attribute: '', value: f.cesql }]
    const entries = Object.entries(f[dialect] as Record<string, unknown>)
    // Our convention (Knative's webhook would accept several, ANDed): one attribute per element.
    expect(entries, JSON.stringify(f)).toHaveLength(1)
    return entries.map(([attribute, value]) => ({ dialect, attribute, value }))
  })
}

/** The values a Trigger requires, by attribute, from its top-level exact filters. */
function requiredExact(filters: Filter[]): Map<string, string> {
  return new Map(filters.filter((f) => f.exact).map((f) => Object.entries(f.exact)[0] as [string, string]))
}

/** The values of `attribute` a Trigger lets through: one exact value, or any of several exact values. */
function acceptedValues(filters: Filter[], attribute: string): string[] {
  const direct = requiredExact(filters).get(attribute)
  if (direct !== undefined) return [direct]
  return filters.filter((f) => f.any && (f.any as Filter[]).every((g) => g.exact?.[attribute] !== undefined))
    .flatMap((f) => (f.any as Filter[]).map((g) => g.exact[attribute] as string))
}

/** The event types a Trigger lets through. */
const acceptedTypes = (filters: Filter[]) => acceptedValues(filters, 'type')

/** What a Trigger delivers, one entry per kind (no kind: a PingSource's events), as functions declare EVENTS. */
function deliveredBy(t: { doc: any }): Array<{ kineticsource?: string; kind?: string; types: string[] }> {
  const kineticsource = requiredExact(t.doc.spec.filters).get('kineticsource')
  const types = acceptedTypes(t.doc.spec.filters).sort()
  const kinds = acceptedValues(t.doc.spec.filters, 'kind')
  return kinds.length === 0 ? [{ kineticsource, types }] : kinds.map((kind) => ({ kineticsource, kind, types }))
}

const eventKey = (e: { kineticsource?: string; kind?: string }) => `${e.kineticsource}/${e.kind ?? ''}`

describe('function, Service and Trigger share one name', () => {
  it.each(functionNames().map((n) => [n]))('functions/%s has a Service of that name running its own bundle', (name) => {
    const service = services.find((m) => m.name === name)
    expect(service, `knative/services/${name}.yaml`).toBeDefined()
    const [container] = service!.doc.spec.template.spec.containers
    expect([...container.command, ...container.args]).toEqual(['node', `dist/functions/${name}/main.js`])
  })

  it.each(functionNames().filter((n) => !WITHOUT_TRIGGER.has(n)).map((n) => [n]))('functions/%s has a Trigger of that name delivering to its Service', (name) => {
    const trigger = triggers.find((m) => m.name === name)
    expect(trigger, `knative/triggers/${name}.yaml`).toBeDefined()
    expect(trigger!.doc.spec.subscriber.ref).toMatchObject({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', name })
  })

  it.each(services.map((m) => [m.name, m] as const))('Service %s runs the entry point named after it, from the one image', (name, m) => {
    const { containers } = m.doc.spec.template.spec
    expect(containers).toHaveLength(1)
    expect(containers[0].image).toBe('kinetic')
    expect(containers[0].args).toEqual([`dist/functions/${name}/main.js`])
    expect(m.file).toBe(`services/${name}.yaml`)
  })

  it('every Service and Trigger belongs to a function in functions/, so none outlives its code', () => {
    const names = new Set(functionNames())
    expect(services.map((m) => m.name).filter((n) => !names.has(n))).toEqual([])
    // A function's second Trigger (agent-changed's recheck tick) is named `<function>-<what>`.
    const owner = (t: (typeof triggers)[number]) => String(t.doc.spec.subscriber.ref.name)
    expect(triggers.filter((t) => !names.has(owner(t)) || !(t.name === owner(t) || t.name.startsWith(`${owner(t)}-`))).map((t) => t.name)).toEqual([])
  })

  it('every name fits in 40 characters so the names Knative derives stay under 63', () => {
    const tooLong = [...services, ...triggers, ...sources].map((m) => m.name).filter((n) => n.length > 40)
    expect(tooLong).toEqual([])
  })
})

describe('what each function accepts is exactly what its Triggers send', () => {
  const withTriggers = functionNames().filter((n) => !WITHOUT_TRIGGER.has(n))
  it.each(withTriggers.map((n) => [n]))('functions/%s refuses any other CloudEvent: its EVENTS are its Triggers\' filters', async (name) => {
    const { EVENTS } = await import(`../../functions/${name}/index.ts`) as { EVENTS?: Array<{ kineticsource: string; kind?: string; types: readonly string[] }> }
    const fromTriggers = triggers.filter((t) => t.doc.spec.subscriber.ref.name === name).flatMap(deliveredBy)
    const declared = (EVENTS ?? []).map((e) => ({ kineticsource: e.kineticsource, ...(e.kind ? { kind: e.kind } : {}), types: [...e.types].sort() }))
    const byKey = (a: { kineticsource?: string; kind?: string }, b: { kineticsource?: string; kind?: string }) => eventKey(a).localeCompare(eventKey(b))
    expect(declared.sort(byKey)).toEqual(fromTriggers.sort(byKey))
  })
})

describe('Triggers', () => {
  it.each(triggers.map((m) => [m.name, m] as const))('Trigger %s subscribes from the default Broker to a Service in knative/', (_, m) => {
    expect(m.doc.spec.broker).toBe('default')
    expect(m.file).toBe(`triggers/${m.name}.yaml`)
    const ref = m.doc.spec.subscriber.ref
    expect(ref.kind).toBe('Service')
    expect(serviceNames.has(ref.name)).toBe(true)
    expect(ref.namespace ?? m.namespace).toBe('kinetic-system')
  })

  it.each(triggers.map((m) => [m.name, m] as const))('Trigger %s has explicit delivery: retries, exponential backoff, a timeout and a dead-letter sink', (_, m) => {
    const d = m.doc.spec.delivery
    expect(d.retry).toBeGreaterThanOrEqual(1)
    expect(d.backoffPolicy).toBe('exponential')
    expect(d.backoffDelay).toBeTypeOf('string')
    expect(d.timeout).toBeTypeOf('string')
    expect(d.deadLetterSink.ref).toMatchObject({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'dead-letter' })
    expect(serviceNames.has(d.deadLetterSink.ref.name)).toBe(true)
  })

  it.each(triggers.map((m) => [m.name, m] as const))('Trigger %s filters on type and kineticsource with no empty value', (_, m) => {
    expect(m.doc.spec.filter).toBeUndefined()
    const all = leaves(m.doc.spec.filters)
    // An empty value makes the filter unbuildable; Knative then skips it and lets everything through.
    expect(all.filter((l) => typeof l.value !== 'string' || l.value === '')).toEqual([])
    expect(all.filter((l) => l.dialect !== 'cesql' && !/^[a-z][a-z0-9]*$/.test(l.attribute))).toEqual([])
    expect(requiredExact(m.doc.spec.filters).get('kineticsource')).toMatch(/^[a-z0-9]+$/)
    expect(acceptedTypes(m.doc.spec.filters).length).toBeGreaterThan(0)
  })

  it('no Trigger accepts Kinetic\'s own dev.kinetic.* events, and only agent-changed-identity, llmprovider-changed, mcpserver-changed-deployments, recipe-child-changed, recipe-policy-changed and workflow-template-changed take deletes (of objects they keep, copies of keys, what re-opens recipes, or a run leaving its template\'s status)', () => {
    const types = triggers.flatMap((m) => acceptedTypes(m.doc.spec.filters))
    expect(types.filter((t) => t.startsWith('dev.kinetic.'))).toEqual([])
    expect(triggers.filter((m) => acceptedTypes(m.doc.spec.filters).some((t) => t.endsWith('.delete'))).map((m) => m.name).sort()).toEqual(['agent-changed-identity', 'llmprovider-changed', 'mcpserver-changed-deployments', 'recipe-child-changed', 'recipe-policy-changed', 'workflow-template-changed'])
  })

  it('routes each event kind to exactly the function that handles it', () => {
    const routes = Object.fromEntries(triggers.map((m) => [m.name, {
      kineticsource: requiredExact(m.doc.spec.filters).get('kineticsource'),
      kinds: acceptedValues(m.doc.spec.filters, 'kind').sort(),
      types: acceptedTypes(m.doc.spec.filters).sort(),
    }]))
    const res = (kinds: string[], types: string[]) => ({ kineticsource: 'resources', kinds: kinds.sort(), types })
    const ping = (kineticsource: string) => ({ kineticsource, kinds: [], types: ['dev.knative.sources.ping'] })
    expect(routes).toEqual({
      'workflow-changed': res(['Workflow'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.update']),
      'step-job-finished': res(['Job'], ['dev.knative.apiserver.resource.update']),
      'resync-tick': ping('resync'),
      'workflow-template-changed': res(['Workflow'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.delete', 'dev.knative.apiserver.resource.update']),
      // Templates' own PingSources, made at run time in their namespaces (not in knative/).
      'schedule-fired': ping('schedule'),
      'autonomy-tick': ping('autonomy'),
      'agent-changed': res(['Agent'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.update']),
      'agent-changed-identity': res(['ServiceAccount', 'Role', 'RoleBinding'], ['dev.knative.apiserver.resource.delete']),
      'agent-changed-recheck': ping('agentrecheck'),
      'llmprovider-changed': res(['LLMProvider'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.delete', 'dev.knative.apiserver.resource.update']),
      'llmprovider-changed-probe': ping('llmproviderprobe'),
      'memoryprovider-changed': res(['MemoryProvider'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.update']),
      'memoryprovider-changed-recheck': ping('memoryrecheck'),
      'mcpserver-changed': res(['MCPServer'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.update']),
      'mcpserver-changed-deployments': res(['Deployment'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.delete', 'dev.knative.apiserver.resource.update']),
      'mcpserver-changed-resync': ping('mcpserverresync'),
      'workflowrecipe-changed': res(['WorkflowRecipe'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.update']),
      'workflowrecipe-changed-resync': ping('recipesresync'),
      'recipe-child-changed': res(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'Service', 'MCPServer', 'Workflow'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.delete', 'dev.knative.apiserver.resource.update']),
      'recipe-policy-changed': res(['WorkflowRecipePolicy'], ['dev.knative.apiserver.resource.add', 'dev.knative.apiserver.resource.delete', 'dev.knative.apiserver.resource.update']),
      'recipe-policy-changed-resync': ping('recipepolicyresync'),
    })
  })
})

describe('sources', () => {
  const apiServerSources = ofKind(manifests, 'sources.knative.dev/v1', 'ApiServerSource')
  const resources = apiServerSources[0]!.doc.spec.resources as Array<{ apiVersion: string; kind: string; selector?: LabelSelector }>
  /** How many entries of the one ApiServerSource watch an object of `kind` with `labels`. */
  const watchesOf = (kind: string, labels: Record<string, string>) => resources.filter((r) => r.kind === kind && (!r.selector || selectorMatches(r.selector, labels))).length

  it('one ApiServerSource watches everything, so Kinetic runs one receive adapter pod', () => {
    expect(apiServerSources.map((m) => m.name)).toEqual(['resources'])
  })

  it('watch every step Job on exactly one entry, each shard on its own, and old Jobs without the shard label too', () => {
    expect(resources.filter((r) => r.kind === 'Job' && r.selector?.matchExpressions?.some((e) => e.key === 'purko.io/workflow' && e.operator === 'Exists'))).toHaveLength(STEP_JOB_SHARDS)
    const shards = new Set<string>()
    for (let i = 0; i < 64; i++) {
      // The labels step Jobs carry (test/workflow/job-builder.test.ts).
      const labels = { 'purko.io/workflow': `run-${i}`, 'kinetic.dev/shard': stepJobShard('team-a', `run-${i}`) }
      shards.add(labels['kinetic.dev/shard'])
      expect(watchesOf('Job', labels)).toBe(1)
    }
    expect([...shards].sort()).toEqual(Array.from({ length: STEP_JOB_SHARDS }, (_, i) => String(i)))
    expect(watchesOf('Job', { 'purko.io/workflow': 'made-before-shards' })).toBe(1)
    expect(watchesOf('Job', { 'kinetic.dev/shard': '2' })).toBe(0)
  })

  it('never sends one object twice: the entries of a kind do not overlap, whatever labels an object has', () => {
    const keys = ['purko.io/workflow', 'purko.io/recipe', 'purko.io/mcp-server', 'purko.io/agent']
    for (const kind of new Set(resources.map((r) => r.kind))) {
      for (let mask = 0; mask < 1 << keys.length; mask++) {
        const labels = Object.fromEntries(keys.filter((_, i) => mask & (1 << i)).map((k) => [k, 'x']))
        expect(watchesOf(kind, labels), `${kind} ${JSON.stringify(labels)}`).toBeLessThanOrEqual(1)
      }
    }
    // What each owner labels is watched: a recipe's Deployment, Job and Workflow; an MCP server's Deployment.
    expect(watchesOf('Deployment', { 'purko.io/recipe': 'r' })).toBe(1)
    expect(watchesOf('Deployment', { 'purko.io/mcp-server': 's' })).toBe(1)
    expect(watchesOf('Job', { 'purko.io/recipe': 'r' })).toBe(1)
    expect(watchesOf('Deployment', {})).toBe(0)
  })

  it.each(sources.map((m) => [`${m.kind} ${m.name}`, m] as const))('%s sends to the default Broker with a kineticsource extension a Trigger matches', (_, m) => {
    expect(m.doc.spec.sink.ref).toMatchObject({ apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' })
    const extensions = m.doc.spec.ceOverrides.extensions as Record<string, string>
    for (const key of Object.keys(extensions)) expect(key).toMatch(/^[a-z0-9]+$/)
    // Knative's own extension names: a source must not overwrite what Triggers filter on.
    expect(Object.keys(extensions).filter((k) => ['kind', 'name', 'namespace', 'apiversion'].includes(k))).toEqual([])
    const value = extensions.kineticsource
    expect(value).toMatch(/^[a-z0-9]+$/)
    const matching = triggers.filter((t) => requiredExact(t.doc.spec.filters).get('kineticsource') === value)
    if (m.kind === 'PingSource') expect(matching).toHaveLength(1)
    else {
      // Every kind watched goes to some Trigger, and no Trigger waits for a kind nobody watches.
      const routed = new Set(matching.flatMap((t) => acceptedValues(t.doc.spec.filters, 'kind')))
      expect([...new Set(resources.map((r) => r.kind))].sort()).toEqual([...routed].sort())
    }
  })

  it('watches Workflows, Agents, providers, MCPServers, recipes, recipe policies, labelled step Jobs, agent identities, MCP Deployments and recipe children in every namespace, as whole objects', () => {
    const [source] = apiServerSources
    expect({ mode: source!.doc.spec.mode, namespaceSelector: source!.doc.spec.namespaceSelector }).toEqual({ mode: 'Resource', namespaceSelector: {} })
    const exists = (key: string) => ({ key, operator: 'Exists' })
    const absent = (key: string) => ({ key, operator: 'DoesNotExist' })
    const labelled = (...expressions: object[]) => ({ selector: { matchExpressions: expressions } })
    expect(resources).toEqual([
      { apiVersion: 'purko.io/v1alpha1', kind: 'Workflow' },
      // One watch per shard of step Jobs; the first also takes Jobs without the shard label.
      ...[
        { key: 'kinetic.dev/shard', operator: 'NotIn', values: ['1', '2', '3'] },
        ...['1', '2', '3'].map((shard) => ({ key: 'kinetic.dev/shard', operator: 'In', values: [shard] })),
      ].map((shard) => ({ apiVersion: 'batch/v1', kind: 'Job', ...labelled(exists('purko.io/workflow'), shard) })),
      { apiVersion: 'purko.io/v1alpha1', kind: 'Agent' },
      { apiVersion: 'v1', kind: 'ServiceAccount', ...labelled(exists('purko.io/agent')) },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', ...labelled(exists('purko.io/agent')) },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', ...labelled(exists('purko.io/agent')) },
      { apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider' },
      { apiVersion: 'purko.io/v1alpha1', kind: 'MemoryProvider' },
      { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer' },
      { apiVersion: 'apps/v1', kind: 'Deployment', ...labelled(exists('purko.io/mcp-server')) },
      // Every kind a recipe creates but Secrets (no Secret data on the Broker, spec §15).
      { apiVersion: 'apps/v1', kind: 'Deployment', ...labelled(exists('purko.io/recipe'), absent('purko.io/mcp-server')) },
      { apiVersion: 'apps/v1', kind: 'StatefulSet', ...labelled(exists('purko.io/recipe')) },
      { apiVersion: 'apps/v1', kind: 'DaemonSet', ...labelled(exists('purko.io/recipe')) },
      { apiVersion: 'batch/v1', kind: 'Job', ...labelled(exists('purko.io/recipe'), absent('purko.io/workflow')) },
      { apiVersion: 'batch/v1', kind: 'CronJob', ...labelled(exists('purko.io/recipe')) },
      { apiVersion: 'v1', kind: 'Service', ...labelled(exists('purko.io/recipe')) },
      { apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe' },
      { apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy' },
    ])
  })
})

describe('Services scale to zero and run locked down', () => {
  it.each(services.map((m) => [m.name, m] as const))('Service %s', (_, m) => {
    const annotations = m.doc.spec.template.metadata.annotations
    expect(annotations['autoscaling.knative.dev/min-scale']).toBe('0')
    expect(Number(annotations['autoscaling.knative.dev/max-scale'])).toBeGreaterThanOrEqual(1)
    expect(Object.keys(m.doc.metadata.annotations ?? {}).filter((k) => k.startsWith('autoscaling.knative.dev/'))).toEqual([])
    expect(m.doc.metadata.labels['networking.knative.dev/visibility']).toBe(PUBLIC.has(m.name) ? undefined : 'cluster-local')

    const spec = m.doc.spec.template.spec
    expect(spec.serviceAccountName).toBe(m.name)
    expect(spec.containerConcurrency).toBeGreaterThanOrEqual(1)
    expect(spec.timeoutSeconds).toBeGreaterThanOrEqual(1)
    expect(spec.timeoutSeconds).toBeLessThanOrEqual(600)
    const [c] = spec.containers
    expect(c.readinessProbe.httpGet.path).toBe('/health/readiness')
    expect(c.env.find((e: { name: string }) => e.name === 'LOG_LEVEL')).toBeDefined()
    expect(c.env.filter((e: { name: string }) => ['PORT', 'K_SERVICE', 'K_CONFIGURATION', 'K_REVISION'].includes(e.name))).toEqual([])
    expect(c.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) })
    expect(c.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    })
  })

  it('the functions that read purko objects know the platform namespace', () => {
    const missing = services.filter((m) => m.name !== 'dead-letter')
      .filter((m) => !m.doc.spec.template.spec.containers[0].env.some((e: { name: string }) => e.name === 'KINETIC_PLATFORM_NAMESPACE'))
    expect(missing.map((m) => m.name)).toEqual([])
  })

  it('every function reads the optional kinetic-telemetry ConfigMap, so one object turns tracing on for all of them', () => {
    const reads = (m: (typeof services)[number]) => JSON.stringify(m.doc.spec.template.spec.containers[0].envFrom ?? [])
    const without = services.filter((m) => reads(m) !== JSON.stringify([{ configMapRef: { name: 'kinetic-telemetry', optional: true } }]))
    expect(without.map((m) => m.name)).toEqual([])
    expect(services.length).toBeGreaterThan(10)
  })

  it('every function that decides which MCP servers a step sees is given the same shared namespaces (none by default)', () => {
    const shared = (name: string) => (services.find((m) => m.name === name)!.doc.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>)
      .find((e) => e.name === 'KINETIC_MCP_SHARED_NAMESPACES')?.value
    const values = ['workflow-changed', 'step-job-finished', 'resync-tick', 'mcpserver-changed'].map(shared)
    expect(values).toEqual(['', '', '', ''])
  })

  it("a Trigger's delivery timeout never cuts a request the Service would still finish", () => {
    const seconds = (iso: string) => Number(/^PT(\d+(?:\.\d+)?)S$/.exec(iso)?.[1])
    for (const t of triggers) {
      const service = services.find((s) => s.name === t.doc.spec.subscriber.ref.name)!
      expect(seconds(t.doc.spec.delivery.timeout), t.name).toBeLessThanOrEqual(service.doc.spec.template.spec.timeoutSeconds)
    }
  })
})

describe('the recipes MCP server (spec §14)', () => {
  const service = services.find((m) => m.name === 'recipes-mcp')!
  const env = service.doc.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>

  it('checks callers with the cluster\'s TokenReview, for the API server\'s audiences unless an audience is configured', () => {
    expect(env.find((e) => e.name === 'KINETIC_RECIPES_MCP_AUTH')?.value).toBe('kubernetes')
    // Unset (not empty): the shipped client token is a ServiceAccount token Secret, valid only for the API server's audiences.
    expect(env.map((e) => e.name)).not.toContain('KINETIC_RECIPES_MCP_AUDIENCE')
  })

  it('no Trigger or source sends it anything: it is called over HTTP', () => {
    expect(triggers.filter((t) => t.doc.spec.subscriber.ref.name === 'recipes-mcp').map((t) => t.name)).toEqual([])
    expect(sources.filter((s) => s.doc.spec.sink?.ref?.name === 'recipes-mcp').map((s) => s.name)).toEqual([])
  })

  it('is registered for agents by an unmanaged bearer MCPServer in ai-agents at the Service\'s cluster-local address', () => {
    const servers = ofKind(manifests, 'purko.io/v1alpha1', 'MCPServer')
    expect(servers.map((m) => [m.file, m.namespace, m.name])).toEqual([['platform/recipes-mcp.yaml', 'ai-agents', 'recipes']])
    const spec = servers[0]!.doc.spec
    expect(spec).toMatchObject({
      managed: false, transport: 'http', auth: 'bearer',
      url: `http://${service.name}.${service.namespace}.svc.cluster.local/mcp`,
    })
    // The token: a ServiceAccount token Secret beside it, for an account of its own that mounts nothing.
    const secret = ofKind(manifests, 'v1', 'Secret').find((m) => m.namespace === 'ai-agents' && m.name === spec.secretRef)!
    expect(secret.doc.type).toBe('kubernetes.io/service-account-token')
    const account = ofKind(manifests, 'v1', 'ServiceAccount').find((m) => m.namespace === 'ai-agents' && m.name === secret.doc.metadata.annotations['kubernetes.io/service-account.name'])
    expect(account?.doc.automountServiceAccountToken).toBe(false)
    // Its only rights are those a platform team binds: Kinetic binds nothing to it.
    const bound = manifests.filter((m) => m.kind.endsWith('RoleBinding'))
      .filter((b) => (b.doc.subjects ?? []).some((s: { name: string; namespace?: string }) => s.name === account!.name && s.namespace === 'ai-agents'))
    expect(bound.map((b) => b.name)).toEqual([])
  })
})
