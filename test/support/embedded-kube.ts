// The one test double of the Kubernetes API: the product's own KubeClient talking HTTP to the
// embedded API server (local/apiserver) with Kinetic's CRDs, so a unit test goes through the
// same requests, validation, resourceVersions, defaults and deletion semantics as the product
// on a cluster. Around the client sit thin layers a test needs: every write that took effect,
// in order (`writes`); one injected failure per call (`failNext`); seeding and reading objects
// straight through the server's in-process store (synchronous, same code path as HTTP).
//
// One server per module instance (started when this module loads: once per test file, or once per worker in the unit tier); every
// `new EmbeddedKube(...)` empties it and seeds it afresh, so a test starts from a clean cluster.
import { Agent as HttpAgent, createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type {
  CoreV1Event, V1ConfigMap, V1Deployment, V1Job, V1Namespace, V1Pod, V1Role, V1RoleBinding, V1Secret, V1Service, V1ServiceAccount,
} from '@kubernetes/client-node'
import { KubeConfig } from '@kubernetes/client-node'
import { createRequestHandler, type RequestHandler } from '../../local/apiserver/http-handler.js'
import { kubeconfigYaml } from '../../local/apiserver/kubeconfig.js'
import { ObjectStore, type KubeObject, type TypeRef } from '../../local/apiserver/index.js'
import { readCrds } from '../../local/crds.js'
import { PINGSOURCE_CRD } from '../../local/knative/pingsource-crd.js'
import { agentServiceAccountName } from '../../shared/agent/plan/names.js'
import { RefusedError } from '../../shared/core/errors.js'
import { KubeClient } from '../../shared/kube/client.js'
import { CHILD_RESOURCES } from '../../shared/kube/client/children.js'
import type { ChildKind, ChildObject, Kube, StreamHandle } from '../../shared/kube/port.js'
import { silentLogger } from '../../shared/log.js'
import { PortFaults } from './port-faults.js'
import { REVIEW_VERBS, withReviewStandIns } from './review-stand-ins.js'
import { seedInto, type SeedObjects } from './seed.js'
import type { Agent } from '../../shared/schemas/agent.js'
import type { AgentAutonomyPolicy } from '../../shared/schemas/autonomypolicy.js'
import type { LLMProvider } from '../../shared/schemas/llmprovider.js'
import type { MCPServer } from '../../shared/schemas/mcpserver.js'
import type { MemoryProvider } from '../../shared/schemas/memoryprovider.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import type { WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import type { WorkflowRecipePolicy } from '../../shared/schemas/workflowrecipepolicy.js'

type Method = keyof Kube

const PURKO = 'purko.io/v1alpha1'
const T = {
  Workflow: { apiVersion: PURKO, kind: 'Workflow' },
  Agent: { apiVersion: PURKO, kind: 'Agent' },
  LLMProvider: { apiVersion: PURKO, kind: 'LLMProvider' },
  MCPServer: { apiVersion: PURKO, kind: 'MCPServer' },
  MemoryProvider: { apiVersion: PURKO, kind: 'MemoryProvider' },
  AgentAutonomyPolicy: { apiVersion: PURKO, kind: 'AgentAutonomyPolicy' },
  WorkflowRecipe: { apiVersion: PURKO, kind: 'WorkflowRecipe' },
  WorkflowRecipePolicy: { apiVersion: PURKO, kind: 'WorkflowRecipePolicy' },
  Job: { apiVersion: 'batch/v1', kind: 'Job' },
  ConfigMap: { apiVersion: 'v1', kind: 'ConfigMap' },
  Secret: { apiVersion: 'v1', kind: 'Secret' },
  ServiceAccount: { apiVersion: 'v1', kind: 'ServiceAccount' },
  Service: { apiVersion: 'v1', kind: 'Service' },
  Pod: { apiVersion: 'v1', kind: 'Pod' },
  Namespace: { apiVersion: 'v1', kind: 'Namespace' },
  Event: { apiVersion: 'v1', kind: 'Event' },
  Role: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
  RoleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' },
  Deployment: { apiVersion: 'apps/v1', kind: 'Deployment' },
} satisfies Record<string, TypeRef>

/** Who seeds and edits objects in a test: a person with kubectl, not Kinetic (whose field manager is `kinetic`). */
const BY_HAND = { fieldManager: 'kubectl-edit' } as object

/** The namespaces a fresh embedded server has; every other one is removed between tests. */
const BASE_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease', 'ai-agents', 'purko-system']

/** The file's one embedded API server: its store, its handler, and the clock the store stamps times with. */
interface Shared {
  store: ObjectStore
  /** Uids given since the last reset. */
  uids: number
  /** The uid a seed asks the server to give the object it creates next (see `put`). */
  seededUid: string | undefined
  /** Which EmbeddedKube owns the store now (a newer one empties it). */
  owner: number
  handler: RequestHandler
  url: string
  clock: { now: Date } | undefined
  server: Server
}

let shared: Shared | undefined
const keepAlive = new HttpAgent({ keepAlive: true })

async function startShared(): Promise<Shared> {
  const state: Partial<Shared> = { clock: undefined, uids: 0, owner: 0 }
  const store = new ObjectStore({
    now: () => (state.clock ? new Date(state.clock.now) : new Date()),
    // UUIDs in creation order, from 1 in each test: a test replayed makes the same uids (and so run ids and names derived from them).
    newUid: () => {
      const seeded = state.seededUid
      state.seededUid = undefined
      return seeded ?? `00000000-0000-4000-8000-${(++state.uids!).toString(16).padStart(12, '0')}`
    },
  })
  for (const crd of [...readCrds(join(import.meta.dirname, '../../crds'), (f) => f.endsWith('.purko.io.yaml')), PINGSOURCE_CRD]) store.create(structuredClone(crd) as KubeObject)
  let address = ''
  const handler = createRequestHandler(store, { log: silentLogger, bookmarkIntervalMs: 60_000, serverAddress: () => address })
  const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => handler.handle(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  server.unref()
  address = `127.0.0.1:${(server.address() as AddressInfo).port}`
  Object.assign(state, { store, handler, server, url: `http://${address}` })
  return state as Shared
}

shared = await startShared()
// Under vitest, a file's end closes its open streams and connections; the server itself (unref'd:
// it keeps no process alive) stays up for the next file when the unit tier shares one module graph
// per worker (`isolate: false`), and a bench script's process exits as if it were not there.
if (process.env.VITEST) (await import('vitest')).afterAll(() => {
  shared?.handler.closeStreams()
  shared?.server.closeIdleConnections()
})

/** Whether a request goes to this file's embedded API server (for a mock of outbound HTTP to let it through). */
export function toApiServer(request: Request): boolean {
  return request.url.startsWith(`${server().url}/`)
}

function server(): Shared {
  if (!shared) throw new Error('the embedded API server is not running')
  return shared
}

/** Removes every object the last test left (finalizers first), keeping the CRDs and the base namespaces. */
function emptyStore(store: ObjectStore): void {
  for (const rt of store.registry.all()) {
    if (rt.kind === 'CustomResourceDefinition' || rt.kind === 'Namespace') continue
    const type = { apiVersion: rt.group ? `${rt.group}/${rt.storageVersion}` : rt.storageVersion, kind: rt.kind }
    for (const obj of store.list(type).items) removeObject(store, type, obj)
  }
  for (const ns of store.list(T.Namespace).items) {
    if (!BASE_NAMESPACES.includes(ns.metadata.name as string)) removeObject(store, T.Namespace, ns)
  }
}

function removeObject(store: ObjectStore, type: TypeRef, obj: KubeObject): void {
  const { name, namespace } = obj.metadata as { name: string; namespace?: string }
  try {
    if ((obj.metadata.finalizers as string[] | undefined)?.length) store.patch(type, namespace, name, { metadata: { finalizers: null } }, { type: 'merge' })
    store.delete(type, namespace, name, { propagationPolicy: 'Background' })
  } catch {
    // Gone already (a cascade took it).
  }
}

/** What a test seeds a fresh cluster with. */
export interface Seed extends SeedObjects {
  /** The clock the API server stamps creation and deletion times with (default: the wall clock). */
  clock?: { now: Date }
}

/** EmbeddedKube but for the review verbs (see below). */
class EmbeddedKubeCore extends PortFaults {
  /** Every write that took effect, e.g. `create Job/wf-a-xxxx`, `status Workflow/wf`. */
  readonly writes: string[] = []
  /** Job names ever created, in order (the exactly-once evidence). */
  readonly createdJobs: string[] = []
  /** Size in bytes of the largest object any write sent, and which one it was. */
  largestWrite = { bytes: 0, what: '' }
  /** Dry-run recipe writes (they store nothing), e.g. `create WorkflowRecipe/shop`. */
  readonly dryRuns: string[] = []
  /** The real client, pointed at the embedded server. */
  readonly client: KubeClient
  private readonly live: ObjectStore
  private readonly owner: number
  private readonly refusals = new Map<string, { code: number; message: string }>()
  private watches = 0
  private readonly watchFailers = new Set<(error: Error) => void>()
  /** Open log follows by `namespace/pod`, each as the function that fails it. */
  private readonly logFailers = new Map<string, Set<(error: Error) => void>>()


  constructor(seed: Seed = {}) {
    super()
    const s = server()
    s.handler.closeStreams()
    s.clock = seed.clock
    emptyStore(s.store)
    s.uids = 0
    this.owner = ++s.owner
    this.live = s.store
    const kc = new KubeConfig()
    kc.loadFromString(kubeconfigYaml(s.url))
    // One kept-alive connection pool for the file, instead of client-node's new agent (and TCP connection) per request.
    ;(kc as unknown as { createAgent: () => HttpAgent }).createAgent = () => keepAlive
    this.client = new KubeClient(kc)
    seedInto(this, seed)
  }

  /** Makes every apply or create of this child throw RefusedError(message, code), as an admission webhook or quota would. */
  refuseApply(kind: ChildKind, namespace: string, name: string, code: number, message: string): this {
    this.refusals.set(`${kind}/${namespace}/${name}`, { code, message })
    return this
  }

  /** Ends a `refuseApply`. */
  allowApply(kind: ChildKind, namespace: string, name: string): this {
    this.refusals.delete(`${kind}/${namespace}/${name}`)
    return this
  }

  /** The API server's in-process store: the cluster this double seeds and reads. */
  get store(): ObjectStore {
    // One cluster per file at a time: a newer EmbeddedKube emptied it for its own test.
    if (server().owner !== this.owner) throw new Error('This EmbeddedKube\'s cluster was emptied by a newer one; read what you need before making another')
    return this.live
  }

  /** The client's verb, counted, with its injected fault, its write recorded when it took effect. */
  async verb(method: Method, args: unknown[]): Promise<unknown> {
    void this.store
    this.enter(method)
    const before = this.beforeWrite(method, args)
    const result = await (this.client[method] as (...a: unknown[]) => Promise<unknown>)(...args)
    this.afterWrite(method, args, result, before)
    if (method === 'followPodLog') return this.failable(result as StreamHandle, this.logFollowers(`${args[0]}/${args[1]}`))
    return method === 'watchWorkflow' ? this.tracked(result as StreamHandle) : result
  }

  /** What a delete or apply must know of the live object to tell whether the write took effect. */
  private beforeWrite(method: Method, args: unknown[]): KubeObject | undefined {
    const [a, b, c] = args as [unknown, unknown, unknown]
    switch (method) {
      case 'deleteJob': return this.store.get(T.Job, a as string, b as string)
      case 'deleteServiceAccount': return this.store.get(T.ServiceAccount, a as string, b as string)
      case 'deleteConfigMap': return this.store.get(T.ConfigMap, a as string, b as string)
      case 'deleteWorkflow': return this.store.get(T.Workflow, a as string, b as string)
      case 'deleteChild': return this.store.get(childType(a as ChildKind), b as string, c as string)
      case 'applyChild':
      case 'createChild': {
        const m = a as ChildObject
        const refusal = this.refusals.get(`${m.kind}/${m.metadata?.namespace}/${m.metadata?.name}`)
        if (refusal) throw new RefusedError(refusal.message, refusal.code)
        return method === 'applyChild' ? this.store.get(childType(m.kind as ChildKind), m.metadata?.namespace, m.metadata?.name ?? '') : undefined
      }
      default: return undefined
    }
  }

  private afterWrite(method: Method, args: unknown[], result: unknown, before: KubeObject | undefined): void {
    const [a, b, c, d] = args as [any, any, any, any]
    const name = (o: { metadata?: { name?: string } }) => o.metadata?.name
    const created = (kind: string) => { if (result === 'created') this.record(`create ${kind}/${name(a)}`, a) }
    switch (method) {
      case 'createServiceAccount': return created('ServiceAccount')
      case 'createRole': return created('Role')
      case 'createRoleBinding': return created('RoleBinding')
      case 'createDeployment': return created('Deployment')
      case 'createService': return created('Service')
      case 'createConfigMap': return created('ConfigMap')
      case 'createSecret': return created('Secret')
      case 'createJob':
        if (result === 'created') this.createdJobs.push(name(a) ?? '')
        return created('Job')
      case 'replaceServiceAccount': return this.record(`replace ServiceAccount/${name(a)}`, a)
      case 'replaceRole': return this.record(`replace Role/${name(a)}`, a)
      case 'replaceRoleBinding': return this.record(`replace RoleBinding/${name(a)}`, a)
      case 'replaceDeployment': return this.record(`replace Deployment/${name(a)}`, a)
      case 'replaceService': return this.record(`replace Service/${name(a)}`, a)
      case 'replaceConfigMap': return this.record(`replace ConfigMap/${name(a)}`, a)
      case 'replaceSecret': return this.record(`replace Secret/${name(a)}`, a)
      case 'deleteJob': if (before) this.writes.push(`delete Job/${b}`); return
      case 'deleteServiceAccount': if (before) this.writes.push(`delete ServiceAccount/${b}`); return
      case 'deleteConfigMap': if (before) this.writes.push(`delete ConfigMap/${b}`); return
      case 'patchAgent': return this.record(`patch Agent/${b}`, d)
      case 'replaceAgentStatus': return this.record(`status Agent/${b}`, { status: d })
      case 'replaceAutonomyPolicyStatus': return this.record(`status AgentAutonomyPolicy/${b}`, { status: d })
      case 'replaceLLMProviderStatus': return this.record(`status LLMProvider/${b}`, { status: d })
      case 'patchMCPServerMetadata': return this.record(`patch MCPServer/${b}`, { metadata: d })
      case 'replaceMCPServerStatus': return this.record(`status MCPServer/${b}`, { status: d })
      case 'replaceMemoryProviderStatus': return this.record(`status MemoryProvider/${b}`, { status: d })
      case 'patchWorkflowMetadata': return this.record(`annotate Workflow/${b}`, { metadata: d })
      case 'patchWorkflowStatus': return this.record(`status Workflow/${b}`, { metadata: { name: b, namespace: a, resourceVersion: c }, status: d })
      case 'patchWorkflow': return this.record(`patch Workflow/${b}`, { patch: d })
      case 'createWorkflow': if (result !== 'exists') this.record(`create Workflow/${name(a)}`, result); return
      case 'deleteWorkflow':
        if (before && (!c?.uid || before.metadata.uid === c.uid)) this.record(`delete Workflow/${b}`, {})
        return
      case 'patchRecipeMetadata': return this.record(`patch WorkflowRecipe/${b}`, { metadata: d })
      case 'replaceRecipeStatus': return this.record(`status WorkflowRecipe/${b}`, { status: d })
      case 'replaceRecipePolicyStatus': return this.record(`status WorkflowRecipePolicy/${a}`, { status: c })
      case 'applyChild': {
        const after = result as ChildObject
        if (!before || before.metadata.resourceVersion !== after.metadata?.resourceVersion) this.record(`apply ${a.kind}/${name(a)}`, after)
        return
      }
      case 'createChild': return this.record(`create ${a.kind}/${name(a)}`, result)
      case 'patchChild': return this.record(`patch ${a}/${c}`, args[4])
      case 'deleteChild':
        if (before && (d?.uid === undefined || before.metadata.uid === d.uid)) this.writes.push(`delete ${a}/${c}`)
        return
      case 'createRecipe':
        if (b?.dryRun) this.dryRuns.push(`create WorkflowRecipe/${name(a)}`)
        else if (result !== 'exists') this.record(`create WorkflowRecipe/${name(a)}`, result)
        return
      case 'replaceRecipe':
        if (b?.dryRun) this.dryRuns.push(`replace WorkflowRecipe/${name(a)}`)
        else this.record(`replace WorkflowRecipe/${name(a)}`, result)
        return
      case 'deleteRecipe': if (result === true) this.writes.push(`delete WorkflowRecipe/${b}`); return
      default: return undefined
    }
  }

  /** A watch, counted while open, that `endWatches(error)` can fail (a 410 Gone, a broken connection). */
  private tracked(handle: StreamHandle): StreamHandle {
    this.watches++
    const stream = this.failable(handle, this.watchFailers)
    stream.done.finally(() => { this.watches-- }).catch(() => {})
    return stream
  }

  /** A stream that one of `failers` can fail with an error (the client stops it) while it is open. */
  private failable(handle: StreamHandle, failers: Set<(error: Error) => void>): StreamHandle {
    let fail!: (error: Error) => void
    const done = new Promise<void>((resolve, reject) => {
      fail = (error) => {
        handle.stop()
        reject(error)
      }
      handle.done.then(resolve, reject)
    })
    done.catch(() => {})
    failers.add(fail)
    done.finally(() => failers.delete(fail)).catch(() => {})
    return { stop: () => handle.stop(), done }
  }

  private logFollowers(key: string): Set<(error: Error) => void> {
    let set = this.logFailers.get(key)
    if (!set) this.logFailers.set(key, (set = new Set()))
    return set
  }

  private record(what: string, sent: unknown): void {
    this.writes.push(what)
    const bytes = Buffer.byteLength(JSON.stringify(sent) ?? '')
    if (bytes > this.largestWrite.bytes) this.largestWrite = { bytes, what }
  }

  // ------------------------------------------------------------------ seeding and reading

  /**
   * Creates or replaces an object as someone else would (kubectl apply, another controller):
   * the server sets uid, generation and creationTimestamp (a given uid is the one the server
   * happens to give it, a given creationTimestamp when the server's clock stood at the create); a given `.status` is then
   * written through the status subresource, as that kind's controller would; a given
   * deletionTimestamp is a delete at that time (the object's finalizers keep it).
   */
  put<O extends { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } }>(object: O): O {
    // As a client sends it: JSON (an undefined field is not there at all).
    const { status, ...body } = JSON.parse(JSON.stringify(object)) as O & { status?: unknown }
    const { uid, resourceVersion: _r, generation: _g, creationTimestamp: created, managedFields: _m, deletionTimestamp: deleted, ...metadata } = (body.metadata ?? {}) as Record<string, unknown>
    const type = { apiVersion: body.apiVersion!, kind: body.kind! }
    const live = this.store.get(type, metadata.namespace as string | undefined, metadata.name as string)
    let stored = live
      ? this.store.update({ ...body, metadata: { ...metadata, resourceVersion: live.metadata.resourceVersion } } as KubeObject, BY_HAND)
      : atTime(typeof created === 'string' ? created : undefined, () => {
        server().seededUid = typeof uid === 'string' ? uid : undefined
        return this.store.create({ ...body, metadata } as KubeObject, BY_HAND)
      })
    if (status !== undefined) stored = this.writeStatus(type, stored, status)
    // Being deleted: the server marks it (its finalizers keep it), at the time given.
    if (typeof deleted === 'string' && !stored.metadata.deletionTimestamp) {
      atTime(deleted, () => this.store.delete(type, stored.metadata.namespace as string | undefined, stored.metadata.name as string))
      stored = this.store.get(type, stored.metadata.namespace as string | undefined, stored.metadata.name as string) ?? stored
    }
    return stored as unknown as O
  }

  private writeStatus(type: TypeRef, stored: KubeObject, status: unknown): KubeObject {
    const rt = this.store.target(type).rt
    return this.store.update({ ...stored, status } as KubeObject, rt.statusSubresource ? { subresource: 'status' } : {})
  }

  /** Stores a Workflow as a user would create it (its status, when given, as the engine left it). */
  putWorkflow(wf: Workflow): Workflow {
    return this.put(wf)
  }

  /** Stores an Agent as a user would apply it, with the ServiceAccount agent-changed makes unless told otherwise. */
  putAgent(agent: Agent, opts: { identity?: boolean } = {}): Agent {
    if (opts.identity === false) return this.put(agent)
    // What agent-changed leaves behind: the ServiceAccount, and its name in status.
    const name = agentServiceAccountName(agent)
    if (!this.store.get(T.ServiceAccount, agent.metadata.namespace, name)) {
      this.store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: agent.metadata.namespace } })
    }
    return this.put({ ...agent, status: { ...(agent.status ?? {}), serviceAccountName: name } })
  }

  putProvider(provider: LLMProvider): LLMProvider {
    return this.put(provider)
  }

  putPolicy(policy: AgentAutonomyPolicy): AgentAutonomyPolicy {
    return this.put(policy)
  }

  /** Stores a WorkflowRecipe as a user would apply it; its status is the one given, else the stored one. */
  putRecipe(recipe: WorkflowRecipe): WorkflowRecipe {
    return this.put(recipe)
  }

  putRecipePolicy(policy: WorkflowRecipePolicy): WorkflowRecipePolicy {
    return this.put(policy)
  }

  /** Stores a recipe child as if someone else had created it. */
  putChild(object: ChildObject): ChildObject {
    return this.put({ ...object, apiVersion: object.apiVersion ?? childApiVersion(object.kind as ChildKind) })
  }

  /** Sets a child's status as its controller would (no generation change). */
  setChildStatus(kind: ChildKind, namespace: string, name: string, status: unknown): ChildObject {
    const type = childType(kind)
    const live = this.store.get(type, namespace, name)
    if (!live) throw new Error(`${kind} ${namespace}/${name} not found`)
    return this.writeStatus(type, live, status) as ChildObject
  }

  /** Sets any object's status as its controller would (the Job controller, the kubelet). */
  setStatus(type: keyof typeof T, namespace: string | undefined, name: string, status: unknown): KubeObject {
    const live = this.store.get(T[type], namespace, name)
    if (!live) throw new Error(`${type} ${namespace}/${name} not found`)
    return this.writeStatus(T[type], live, status)
  }

  /** Removes a deleted child's finalizers, as its controller would; it is then gone. */
  releaseChild(kind: ChildKind, namespace: string, name: string): void {
    if (!this.store.get(childType(kind), namespace, name)) return
    this.store.patch(childType(kind), namespace, name, { metadata: { finalizers: null } }, { type: 'merge' })
  }

  /** Changes annotations as `kubectl annotate` would (no generation bump). */
  annotate(namespace: string, name: string, annotations: Record<string, string>): Workflow {
    return this.store.patch(T.Workflow, namespace, name, { metadata: { annotations } }, { type: 'merge' }) as unknown as Workflow
  }

  /**
   * Deletes a recipe as `kubectl delete` would: with finalizers it stays, marked with
   * `deletionTimestamp` (at `at`, by the server's clock), until the last one is removed.
   */
  markRecipeDeleted(namespace: string, name: string, at?: string): WorkflowRecipe | null {
    if (!this.store.get(T.WorkflowRecipe, namespace, name)) return null
    atTime(at, () => this.store.delete(T.WorkflowRecipe, namespace, name))
    return (this.store.get(T.WorkflowRecipe, namespace, name) ?? null) as WorkflowRecipe | null
  }

  /**
   * Finishes a Job as the Job controller and kubelet would: the Job's conditions, and a pod
   * (`<job>-pod`, label `job-name`) that ran and wrote `log`.
   */
  finishJob(name: string, outcome: 'Succeeded' | 'Failed', log: string, reason?: string): V1Job {
    const job = this.store.list(T.Job, { fieldSelector: `metadata.name=${name}` }).items[0]
    if (!job) throw new Error(`Job ${name} not found`)
    const namespace = job.metadata.namespace as string
    const pod = `${name}-pod`
    if (!this.store.get(T.Pod, namespace, pod)) {
      const created = this.store.create({
        apiVersion: 'v1', kind: 'Pod',
        metadata: { name: pod, namespace, labels: { 'job-name': name } },
        spec: { nodeName: 'node', containers: [{ name: 'step-executor', image: 'executor' }] },
      })
      this.store.update({ ...created, status: { phase: outcome } }, { subresource: 'status' })
    }
    this.store.appendPodLog(namespace, pod, log)
    return this.setStatus('Job', namespace, name, {
      conditions: [{ type: outcome === 'Succeeded' ? 'Complete' : 'Failed', status: 'True', ...(reason ? { reason } : {}) }],
      ...(outcome === 'Succeeded' ? { succeeded: 1 } : { failed: 1 }),
    }) as V1Job
  }

  /** Writes more of a pod's log, as its container would: open followers get it at once. */
  appendPodLog(namespace: string, pod: string, text: string): void {
    this.store.appendPodLog(namespace, pod, text)
  }

  /**
   * The pod's container ended (phase Succeeded): its log followers' streams end. With `error`,
   * they fail with it instead (a dropped connection) and the container runs on.
   */
  endPodLog(namespace: string, pod: string, error?: Error): void {
    if (error) {
      for (const fail of [...(this.logFailers.get(`${namespace}/${pod}`) ?? [])]) fail(error)
      return
    }
    this.setStatus('Pod', namespace, pod, { ...(this.store.get(T.Pod, namespace, pod)?.status ?? {}), phase: 'Succeeded' })
  }

  /**
   * The API server ends every open watch and log stream (a server-side close); with `error`, the
   * open Workflow watches fail with it instead (injected: a 410 Gone, a broken connection).
   */
  endWatches(error?: Error): void {
    if (error) for (const fail of [...this.watchFailers]) fail(error)
    else server().handler.closeStreams()
  }

  /** How many watchWorkflow streams are open. */
  get openWatches(): number {
    return this.watches
  }

  workflow(namespace: string, name: string): Workflow {
    return this.store.get(T.Workflow, namespace, name) as unknown as Workflow
  }

  recipe(namespace: string, name: string): WorkflowRecipe | undefined {
    return this.store.get(T.WorkflowRecipe, namespace, name) as unknown as WorkflowRecipe | undefined
  }

  child(kind: ChildKind, namespace: string, name: string): ChildObject | undefined {
    return this.store.get(childType(kind), namespace, name) as ChildObject | undefined
  }

  /** Every stored child of one kind, in any namespace. */
  children(kind: ChildKind): ChildObject[] {
    return this.store.list(childType(kind)).items as ChildObject[]
  }

  /** Records Events as another controller would have (kubelet, a person's kubectl). */
  putEvents(...events: CoreV1Event[]): void {
    for (const event of events) this.put({ apiVersion: 'v1', kind: 'Event', ...event })
  }

  /** Every Event, oldest first. */
  get events(): CoreV1Event[] {
    return this.store.list(T.Event).items
      .sort((x, y) => Number(x.metadata.resourceVersion) - Number(y.metadata.resourceVersion)) as unknown as CoreV1Event[]
  }

  // Map views of the stored objects, keyed `namespace/name` (Namespaces and policies by name).
  get workflows() { return this.view<Workflow>(T.Workflow) }
  get agents() { return this.view<Agent>(T.Agent) }
  get providers() { return this.view<LLMProvider>(T.LLMProvider) }
  get mcpServers() { return this.view<MCPServer>(T.MCPServer) }
  get memoryProviders() { return this.view<MemoryProvider>(T.MemoryProvider) }
  get policies() { return this.view<AgentAutonomyPolicy>(T.AgentAutonomyPolicy) }
  get recipes() { return this.view<WorkflowRecipe>(T.WorkflowRecipe) }
  get recipePolicies() { return this.view<WorkflowRecipePolicy>(T.WorkflowRecipePolicy) }
  get jobs() { return this.view<V1Job>(T.Job) }
  get configMaps() { return this.view<V1ConfigMap>(T.ConfigMap) }
  get secrets() { return this.view<V1Secret>(T.Secret) }
  get serviceAccounts() { return this.view<V1ServiceAccount>(T.ServiceAccount) }
  get roles() { return this.view<V1Role>(T.Role) }
  get roleBindings() { return this.view<V1RoleBinding>(T.RoleBinding) }
  get deployments() { return this.view<V1Deployment>(T.Deployment) }
  get services() { return this.view<V1Service>(T.Service) }
  get pods() { return this.view<V1Pod>(T.Pod) }
  get namespaces() { return this.view<V1Namespace>(T.Namespace) }

  /**
   * Pods' logs, keyed `namespace/pod` or `namespace/job` (the first pod labelled `job-name=<job>`):
   * `set` writes the text as the container would, `get` reads it.
   */
  get logs() {
    const podOf = (key: string): [string, string] | undefined => {
      const [namespace, name] = key.split('/') as [string, string]
      if (this.store.get(T.Pod, namespace, name)) return [namespace, name]
      const pod = this.store.list(T.Pod, { namespace, labelSelector: `job-name=${name}` }).items[0]
      return pod ? [namespace, pod.metadata.name as string] : undefined
    }
    return {
      set: (key: string, text: string) => {
        const pod = podOf(key)
        if (!pod) throw new Error(`no pod ${key}, and no pod of a Job of that name`)
        this.store.appendPodLog(pod[0], pod[1], text)
      },
      get: (key: string): string | undefined => {
        const pod = podOf(key)
        return pod ? this.store.podLog(pod[0], pod[1]) : undefined
      },
    }
  }

  /** Recipe children of every kind, keyed `Kind/namespace/name`. */
  get childObjects() { return new ChildView(this) }

  private view<O>(type: TypeRef): StoreView<O> {
    return new StoreView<O>(this, type)
  }
}

/** The port's verbs, as EmbeddedKube provides them (on its prototype, so a subclass may override one and call `super`). */
interface EmbeddedKubeCore extends Kube {}
{
  const probe = new KubeConfig()
  probe.loadFromString(kubeconfigYaml('http://127.0.0.1:1'))
  for (const method of Object.keys(new KubeClient(probe)) as Method[]) {
    if (REVIEW_VERBS.has(method)) continue
    Object.defineProperty(EmbeddedKubeCore.prototype, method, {
      value(this: EmbeddedKubeCore, ...args: unknown[]) { return this.verb(method, args) },
      writable: true, configurable: true,
    })
  }
}

/**
 * The real KubeClient against the embedded API server, with write recording, fault injection
 * and seeding helpers. Every port verb is the client's, except the ones the embedded server
 * cannot answer as a test needs: reviewToken, reviewAccess, reviewSelfAccess and whoAmI (it has
 * no TokenReview or SubjectAccessReview and one all-powerful user) are the test's stand-ins.
 */
export class EmbeddedKube extends withReviewStandIns(EmbeddedKubeCore) {}

/** What a Map-like view of stored objects reads: its entries, computed from the store on each read. */
abstract class MapView<V> implements Iterable<[string, V]> {
  protected abstract all(): [string, V][]
  abstract get(key: string): V | undefined

  has(key: string): boolean {
    return this.get(key) !== undefined
  }

  get size(): number {
    return this.all().length
  }

  keys(): IterableIterator<string> { return this.all().map(([k]) => k)[Symbol.iterator]() }
  values(): IterableIterator<V> { return this.all().map(([, v]) => v)[Symbol.iterator]() }
  entries(): IterableIterator<[string, V]> { return this.all()[Symbol.iterator]() }
  [Symbol.iterator](): Iterator<[string, V]> { return this.entries() }
}

/**
 * A Map-like view of one kind in the store, keyed `namespace/name` (cluster-scoped: `name`):
 * reads are copies; `set` puts (creates or replaces, status through its subresource); `delete` deletes.
 */
export class StoreView<O> extends MapView<O> {
  constructor(private readonly kube: EmbeddedKubeCore, private readonly type: TypeRef) {
    super()
  }

  private split(key: string): [string | undefined, string] {
    const slash = key.indexOf('/')
    return slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)]
  }

  protected all(): [string, O][] {
    return this.kube.store.list(this.type).items.map((o) => [o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : String(o.metadata.name), o as O])
  }

  get(key: string): O | undefined {
    const [ns, name] = this.split(key)
    return this.kube.store.get(this.type, ns, name) as O | undefined
  }

  set(key: string, object: O): this {
    const [ns, name] = this.split(key)
    const o = object as { metadata?: Record<string, unknown> }
    this.kube.put({ ...this.type, ...o, metadata: { ...(o.metadata ?? {}), name, ...(ns !== undefined ? { namespace: ns } : {}) } })
    return this
  }

  delete(key: string): boolean {
    const [ns, name] = this.split(key)
    const live = this.kube.store.get(this.type, ns, name)
    if (!live) return false
    removeObject(this.kube.store, this.type, live)
    return true
  }

  /** Deletes every object of the kind (finalizers removed first). */
  clear(): void {
    for (const [key] of this.all()) this.delete(key)
  }
}

/** Runs `write` with the API server's clock at `at` (when given), as if it happened then. */
function atTime<R>(at: string | undefined, write: () => R): R {
  const s = server()
  const clock = s.clock
  if (at) s.clock = { now: new Date(at) }
  try {
    return write()
  } finally {
    s.clock = clock
  }
}

/** Every recipe child kind's objects as one Map-like view, keyed `Kind/namespace/name` (read and delete). */
export class ChildView extends MapView<ChildObject> {
  constructor(private readonly kube: EmbeddedKubeCore) {
    super()
  }

  protected all(): [string, ChildObject][] {
    return (Object.keys(CHILD_RESOURCES) as ChildKind[]).flatMap((kind) =>
      this.kube.children(kind).map((c) => [`${kind}/${c.metadata?.namespace}/${c.metadata?.name}`, c] as [string, ChildObject]))
  }

  get(key: string): ChildObject | undefined {
    const [kind, namespace, name] = key.split('/') as [ChildKind, string, string]
    return this.kube.child(kind, namespace, name)
  }

  /** Deletes the child as someone else would (finalizers removed first: it is gone at once). */
  delete(key: string): boolean {
    const [kind, namespace, name] = key.split('/') as [ChildKind, string, string]
    const live = this.kube.child(kind, namespace, name)
    if (!live) return false
    removeObject(this.kube.store, childType(kind), live as KubeObject)
    return true
  }
}

function childApiVersion(kind: ChildKind): string {
  const { group, version } = CHILD_RESOURCES[kind]
  return group ? `${group}/${version}` : version
}

function childType(kind: ChildKind): TypeRef {
  return { apiVersion: childApiVersion(kind), kind }
}
