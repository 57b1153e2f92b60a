// Everything Kinetic ships, judged by a real kube-apiserver v1.34: the CRDs of crds/, purko's
// example manifests and our own, and knative/ as `kubectl apply -k knative/` sends it (after
// Knative's own CRDs). Each failure names the object and quotes what the server answered.
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { expect, it } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { allCrds } from '../../shared/crd/definitions.js'
import { validateAgainstCrd } from '../../shared/crd/validate.js'
import { ROOT } from '../knative/manifests.js'
import { referenceDir } from '../support/reference.js'
import { carries, INVALID, INVALID_POLICIES, SCHEMA_REFUSALS } from '../crds/recipe-fixtures.js'
import { applyProblems, createCrd, documents, label, problemsOf } from './kubectl-apply.js'
import { renderKustomization, type RenderedObject } from './kustomize.js'
import { describeCluster, useControlPlane } from './tier.js'

/** An Agent of purko's webhook tests, with spec and model overrides. */
function anAgent(spec: Record<string, unknown> = {}, model: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'agent-rules' },
    spec: { type: 'executor', model: { provider: 'anthropic', name: 'claude', ...model }, ...spec },
  }
}

const RBAC_KINDS = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'])

// What `kubectl apply -f crds/` reads (the kustomization, crds/Kustomization, has no .yaml extension).
const purkoCrdFiles = documents(join(ROOT, 'crds'), ROOT)
const knativeCrdFiles = documents(join(referenceDir(), 'knative', 'crds'), referenceDir())
const purkoExamples = documents(join(referenceDir(), 'purko', 'examples'), referenceDir())
const localExamples = documents(join(ROOT, 'examples', 'local'), ROOT)
const recipeExamples = documents(join(referenceDir(), 'recipes', 'examples'), referenceDir())
const installTree = renderKustomization(join(ROOT, 'knative'), ROOT)
// purko's namespaces and the functions' grants in them: applied by hand after knative/.
const platformNamespaces = documents(join(ROOT, 'knative', 'platform'), ROOT, (f) => !f.endsWith('namespaces.yaml'))
const platformTree = renderKustomization(join(ROOT, 'knative', 'platform'), ROOT)

describeCluster('everything Kinetic ships is accepted by a real kube-apiserver v1.34', () => {
  const cp = useControlPlane()
  const once = new Map<string, Promise<string[]>>()
  const memo = (key: string, run: () => Promise<string[]>) => {
    if (!once.has(key)) once.set(key, run())
    return once.get(key)!
  }
  const crd = (doc: RenderedObject) => memo(`crd ${doc.object.metadata?.name}`, () => createCrd(cp.current.admin, doc))
  /** The CRD that serves an object's kind, when it is one of ours or Knative's. */
  const crdServing = (obj: KubeObject) => [...purkoCrdFiles, ...knativeCrdFiles].find((d) => {
    const spec = d.object.spec as { group: string; names: { kind: string } }
    return obj.apiVersion?.startsWith(`${spec.group}/`) && obj.kind === spec.names.kind
  })
  const namespace = (name: string) => memo(`namespace ${name}`, () =>
    applyProblems(cp.current.admin, { file: '(test setup)', object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } }, { dryRun: false }))
  /**
   * What an object needs before it can be judged, as a user who installed purko (or Kinetic) and
   * Knative has it: the CRD of its kind and its namespace. The problems met on the way.
   */
  const prerequisites = async (obj: KubeObject) => {
    const served = crdServing(obj)
    const ns = obj.metadata?.namespace
    return [...(served ? await crd(served) : []), ...(ns ? await namespace(ns) : [])]
  }

  it('reads what it judges: every purko.io CRD, purko\'s examples of every kind, the recipe examples, and knative/ with crds/ and every file', () => {
    expect(purkoCrdFiles.map((d) => (d.object.spec as { names: { kind: string } }).names.kind).sort())
      .toEqual(allCrds().map((c) => c.spec.names.kind).sort())
    const exampleKinds = new Set(purkoExamples.map((d) => d.object.kind))
    for (const kind of ['Agent', 'Workflow', 'LLMProvider', 'MCPServer', 'MemoryProvider', 'AgentAutonomyPolicy', 'Secret', 'PersistentVolumeClaim']) expect(exampleKinds).toContain(kind)
    expect(new Set(recipeExamples.map((d) => d.object.kind))).toEqual(new Set(['Namespace', 'Secret', 'WorkflowRecipe', 'WorkflowRecipePolicy']))
    const rendered = new Set(installTree.map((d) => d.file))
    for (const d of purkoCrdFiles) expect(rendered).toContain(d.file)
    for (const kind of ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Broker', 'Trigger', 'ApiServerSource', 'PingSource', 'Service']) {
      expect(installTree.map((d) => d.object.kind)).toContain(kind)
    }
  })

  it.each(purkoCrdFiles.map((d) => [label(d), d] as const))('%s is created with no warnings and becomes Established', async (_, doc) => {
    expect(await crd(doc)).toEqual([])
  }, 60_000)

  it.each([...purkoExamples, ...localExamples, ...recipeExamples].map((d) => [label(d), d] as const))(
    '%s applies unchanged (kubectl apply --dry-run=server --validate=strict)',
    async (_, doc) => {
      expect(await prerequisites(doc.object)).toEqual([])
      expect(await applyProblems(cp.current.admin, doc, { dryRun: true })).toEqual([])
    },
    60_000,
  )

  it.each([
    ['an Agent', localExamples.find((d) => d.object.kind === 'Agent')!],
    ['a Trigger', installTree.find((d) => d.object.kind === 'Trigger')!],
  ])('would catch a misspelled field in %s: the dry run names the object and quotes the server', async (_, doc) => {
    const misspelled = { ...doc, object: { ...doc.object, metadata: { ...doc.object.metadata, lables: { app: 'x' } } } }
    expect(await prerequisites(misspelled.object)).toEqual([])
    const problems = await applyProblems(cp.current.admin, misspelled, { dryRun: true })
    expect(problems).toHaveLength(1)
    expect(problems[0]?.startsWith(`${label(doc)}: the API server refused it (`)).toBe(true)
    expect(problems[0]).toContain('unknown field "metadata.lables"')
  }, 120_000)

  it('would report a warning: the server\'s Warning header reaches the failure message', async () => {
    expect(await namespace('warned')).toEqual([])
    const res = await cp.current.admin.send('POST', '/api/v1/namespaces/warned/configmaps?dryRun=All&fieldValidation=Warn', {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, datta: { a: '1' },
    })
    expect(problemsOf('ConfigMap warned/c', res)).toEqual(['ConfigMap warned/c: the API server warned: unknown field "datta"'])
  })

  it.each(knativeCrdFiles.map((d) => [label(d), d] as const))('Knative\'s %s installs, so its schema judges our objects', async (_, doc) => {
    expect(await crd(doc)).toEqual([])
  }, 60_000)

  it.each(installTree.map((d) => [label(d), d] as const))(
    'knative/ as kubectl apply -k sends it: %s passes a server-side dry run with strict field validation',
    async (_, doc) => {
      expect(await prerequisites(doc.object)).toEqual([])
      expect(await applyProblems(cp.current.admin, doc, { dryRun: true })).toEqual([])
    },
    120_000,
  )

  it('knative/ needs no namespace but its own: kubectl apply -k knative/ creates only kinetic-system and puts objects only there', () => {
    expect(installTree.filter((d) => d.object.kind === 'Namespace').map((d) => d.object.metadata?.name)).toEqual(['kinetic-system'])
    expect([...new Set(installTree.flatMap((d) => (d.object.metadata?.namespace ? [d.object.metadata.namespace] : [])))]).toEqual(['kinetic-system'])
  })

  it('applies platform/namespaces.yaml and then kubectl apply -k knative/platform/ for real: every grant binds a role that exists', async () => {
    const admin = cp.current.admin
    const problems: string[] = []
    for (const doc of [...platformNamespaces, ...platformTree]) problems.push(...await applyProblems(admin, doc, { dryRun: false }))
    for (const doc of platformTree.filter((d) => d.object.kind === 'RoleBinding')) {
      const ref = doc.object.roleRef as { kind: string; name: string }
      const path = ref.kind === 'ClusterRole'
        ? `/apis/rbac.authorization.k8s.io/v1/clusterroles/${ref.name}`
        : `/apis/rbac.authorization.k8s.io/v1/namespaces/${doc.object.metadata?.namespace}/roles/${ref.name}`
      // ClusterRoles come from knative/ itself, so read them from there rather than the server.
      const known = ref.kind === 'ClusterRole' ? installTree.some((d) => d.object.kind === 'ClusterRole' && d.object.metadata?.name === ref.name) : Boolean(await admin.get(path))
      if (!known) problems.push(`${label(doc)}: binds ${ref.kind} ${ref.name}, which nothing ships`)
    }
    expect(problems).toEqual([])
  }, 120_000)

  it('applies the Namespace, ServiceAccounts, ClusterRoles and ClusterRoleBindings of knative/ for real, and every binding names a role and accounts that exist', async () => {
    const admin = cp.current.admin
    const rbac = installTree.filter((d) => RBAC_KINDS.has(d.object.kind ?? ''))
    const ordered = [...rbac].sort((a, b) => Number(b.object.kind === 'Namespace') - Number(a.object.kind === 'Namespace'))
    const problems: string[] = []
    for (const doc of ordered) problems.push(...await applyProblems(admin, doc, { dryRun: false }))
    expect(problems).toEqual([])

    for (const doc of rbac) {
      const { apiVersion, kind, metadata } = doc.object
      const live = await admin.get(await admin.pathFor(apiVersion!, kind!, metadata?.namespace, metadata?.name) as string)
      if (!live) problems.push(`${label(doc)}: not found after it was applied`)
      if ((kind === 'ClusterRole' || kind === 'Role') && !isDeepStrictEqual(live?.rules, doc.object.rules)) {
        problems.push(`${label(doc)}: the server stored the rules ${JSON.stringify(live?.rules)}, the file says ${JSON.stringify(doc.object.rules)}`)
      }
      if (kind === 'ClusterRoleBinding' || kind === 'RoleBinding') {
        const ref = doc.object.roleRef as { kind: string; name: string }
        const role = await admin.get(ref.kind === 'ClusterRole'
          ? `/apis/rbac.authorization.k8s.io/v1/clusterroles/${ref.name}`
          : `/apis/rbac.authorization.k8s.io/v1/namespaces/${metadata?.namespace}/roles/${ref.name}`)
        if (!role) problems.push(`${label(doc)}: binds ${ref.kind} ${ref.name}, which knative/ does not create`)
        for (const s of (doc.object.subjects ?? []) as Array<{ kind: string; name: string; namespace?: string }>) {
          if (s.kind === 'ServiceAccount' && !await admin.get(`/api/v1/namespaces/${s.namespace}/serviceaccounts/${s.name}`)) {
            problems.push(`${label(doc)}: binds ServiceAccount ${s.namespace}/${s.name}, which knative/ does not create`)
          }
        }
      }
    }
    expect(problems).toEqual([])
    expect(rbac.filter((d) => d.object.kind === 'ClusterRoleBinding').length).toBeGreaterThan(0)
  }, 120_000)

  const agentCrd = allCrds().find((c) => c.spec.names.kind === 'Agent')!

  it.each<[string, KubeObject, string, string]>([
    ['an Agent with maxTokens 0', anAgent({}, { maxTokens: 0 }), 'spec.model.maxTokens', 'spec.model.maxTokens must be between 1 and 2000000, got 0'],
    ['an Agent with maxTokens above 2000000', anAgent({}, { maxTokens: 2000001 }), 'spec.model.maxTokens', 'spec.model.maxTokens must be between 1 and 2000000, got 2000001'],
    ['an Agent with temperature 2.5', anAgent({}, { temperature: 2.5 }), 'spec.model.temperature', 'spec.model.temperature must be between 0.0 and 2.0, got 2.500000'],
    ['an Agent with a negative temperature', anAgent({}, { temperature: -0.1 }), 'spec.model.temperature', 'spec.model.temperature must be between 0.0 and 2.0, got -0.100000'],
    ['an Agent with an empty model provider', anAgent({}, { provider: '' }), 'spec.model.provider', 'spec.model.provider must not be empty'],
    ['an Agent with an unknown memory type', anAgent({ memory: { type: 'graph' } }), 'spec.memory.type', 'spec.memory.type must be buffer, summary, vector, or none (got "graph")'],
    ['an Agent with an unknown memory behavior', anAgent({ memory: { behavior: 'bogus' } }), 'spec.memory.behavior', 'spec.memory.behavior must be off, session, or persistent (got "bogus")'],
    ['an Agent with an unknown memory scope', anAgent({ memory: { scope: 'cluster' } }), 'spec.memory.scope', 'spec.memory.scope must be agent, group, or namespace (got "cluster")'],
    ['an Agent with maxContextTokens above 32768', anAgent({ memory: { behavior: 'persistent', maxContextTokens: 40000 } }), 'spec.memory.maxContextTokens', 'spec.memory.maxContextTokens must be <= 32768 (got 40000)'],
    ['an Agent with maxEntries above 10000', anAgent({ memory: { maxEntries: 10001 } }), 'spec.memory.maxEntries', 'spec.memory.maxEntries must be <= 10000 (got 10001)'],
    ['a monitor Agent with two replicas', anAgent({ type: 'monitor', replicas: 2 }), 'spec.replicas', 'AG-005: monitor agents are limited to replicas <= 1'],
    ['a retriever Agent without memory', anAgent({ type: 'retriever' }), 'spec', 'AG-010: retriever agents need spec.memory.type (vector/buffer/summary) or spec.memory.behavior (session/persistent)'],
  ])('refuses %s with the message purko\'s webhook gave, exactly as the embedded API server does', async (_, agent, field, message) => {
    expect(await prerequisites(agent)).toEqual([])
    const res = await cp.current.admin.send<{ reason?: string; details?: { causes?: unknown[] } }>('POST', '/apis/purko.io/v1alpha1/namespaces/agent-rules/agents?dryRun=All', agent)
    expect(res.status).toBe(422)
    const cause = { reason: 'FieldValueInvalid', field, message: `Invalid value: "object": ${message}` }
    expect(res.body.details?.causes).toEqual([cause])
    const local = validateAgainstCrd(agentCrd, agent)
    expect(local.ok ? [] : local.causes).toEqual([cause])
  }, 60_000)

  it.each([...INVALID, ...INVALID_POLICIES])('refuses a recipe or policy with %s with the spec\'s message (spec §8.1)', async (_, obj, message) => {
    const doc = obj as KubeObject
    expect(await prerequisites(doc)).toEqual([])
    const path = await cp.current.admin.pathFor(doc.apiVersion!, doc.kind!, doc.metadata?.namespace ?? 'default')
    const res = await cp.current.admin.send<{ details?: { causes?: { message?: string }[] } }>('POST', `${path}?dryRun=All`, doc)
    expect(res.status).toBe(422)
    expect(carries(res.body.details?.causes, message), JSON.stringify(res.body)).toBe(true)
  }, 60_000)

  it.each(SCHEMA_REFUSALS)('refuses a recipe with %s by its schema keywords', async (_, obj, field) => {
    const doc = obj as KubeObject
    expect(await prerequisites(doc)).toEqual([])
    const path = await cp.current.admin.pathFor(doc.apiVersion!, doc.kind!, doc.metadata?.namespace ?? 'default')
    const res = await cp.current.admin.send<{ details?: { causes?: { field?: string }[] } }>('POST', `${path}?dryRun=All`, doc)
    expect(res.status).toBe(422)
    expect((res.body.details?.causes ?? []).map((c) => c.field)).toContain(field)
  }, 60_000)
})
