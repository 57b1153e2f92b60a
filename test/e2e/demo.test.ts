import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import type { KubeObject } from '../../local/knative/kube-http.js'
import type { DeliveryRecord } from '../../local/knative/broker.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'

const ROOT = join(import.meta.dirname, '../..')
const WF_PATH = '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/release-notes'
const RECIPE_PATH = '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflowrecipes/shop'
const SANDBOX = 'sandbox-recipes'

type Step = { name: string; phase?: string; error?: string; startTime?: string; completionTime?: string }
type Wf = KubeObject & { status?: { phase?: string; stepStatuses?: Step[] } }
type Recipe = KubeObject & { status?: { phase?: string; currentRevision?: number; history?: Array<{ to?: string }>; tests?: Array<{ name: string; phase?: string }> } }
type Status = { readyReplicas?: number; availableReplicas?: number; phase?: string; conditions?: Array<{ type?: string; status?: string }> }

let plane: LocalPlane
const deliveries: DeliveryRecord[] = []
let final: Wf
let recipe: Recipe
let sawApprovalWait = false

function examples(): KubeObject[] {
  const dir = join(ROOT, 'examples', 'local')
  return readdirSync(dir).filter((n) => n.endsWith('.yaml')).sort()
    .flatMap((n) => parseAllDocuments(readFileSync(join(dir, n), 'utf8')).map((d) => d.toJSON() as KubeObject))
}

beforeAll(async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-e2e-'))
  plane = await startLocalPlane({ root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs'), pingIntervalMs: 5000 })
  plane.knative.onDelivery((d) => deliveries.push(d))
  for (const obj of examples()) await plane.kube.apply(obj)

  const deadline = Date.now() + 150_000
  for (;;) {
    const wf = (await plane.kube.get(WF_PATH)) as Wf
    const waiting = wf.status?.stepStatuses?.find((s) => s.name === 'publish' && s.error?.startsWith('Waiting for human approval'))
    if (waiting && wf.metadata?.annotations?.['purko.io/approve-publish'] !== 'true') {
      sawApprovalWait = true
      await plane.kube.mergePatch(WF_PATH, { metadata: { annotations: { 'purko.io/approve-publish': 'true' } } })
    }
    if (['Succeeded', 'Failed', 'Cancelled', 'CompletedWithErrors'].includes(wf.status?.phase ?? '')) {
      final = wf
      break
    }
    if (Date.now() > deadline) throw new Error(`The example did not finish: ${JSON.stringify(wf.status)}`)
    await new Promise((r) => setTimeout(r, 200))
  }
  for (;;) {
    const r = (await plane.kube.get(RECIPE_PATH)) as Recipe | null
    if (['Active', 'Failed', 'Rejected', 'RollbackFailed'].includes(r?.status?.phase ?? '')) {
      recipe = r as Recipe
      break
    }
    if (Date.now() > deadline) throw new Error(`The example recipe did not settle: ${JSON.stringify(r?.status)}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}, 240_000)

afterAll(async () => {
  await plane?.stop()
}, 30_000)

const step = (name: string) => final.status?.stepStatuses?.find((s) => s.name === name)

describe('the bundled example on the local plane', () => {
  it('runs to Succeeded through the real functions, ApiServerSources and Triggers', () => {
    expect(final.status?.phase).toBe('Succeeded')
    const triggers = new Set(deliveries.filter((d) => d.outcome === 'delivered').map((d) => d.trigger))
    expect(triggers).toContain('workflow-changed')
    expect(triggers).toContain('step-job-finished')
    expect(deliveries.filter((d) => d.outcome === 'dropped')).toEqual([])
  })

  it('skips the step whose condition is false, and still runs the steps after it', () => {
    expect(step('deep-audit')?.phase).toBe('Skipped')
    expect(step('draft-notes')?.phase).toBe('Succeeded')
  })

  it('runs the two research steps side by side', () => {
    const a = step('research-changes')
    const b = step('research-issues')
    expect(Date.parse(a?.startTime ?? '')).toBeLessThanOrEqual(Date.parse(b?.completionTime ?? ''))
    expect(Date.parse(b?.startTime ?? '')).toBeLessThanOrEqual(Date.parse(a?.completionTime ?? ''))
  })

  it('holds the publish step for human approval until the annotation is set', () => {
    expect(sawApprovalWait).toBe(true)
    expect(final.metadata?.annotations?.['purko.io/approve-publish']).toBe('true')
    expect(step('publish')?.phase).toBe('Succeeded')
  })

  it('leaves no Warning Event: its Agents say they run on the offline model, and nothing failed', async () => {
    const events = (await plane.kube.get<{ items: Array<{ type?: string; reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }> }>('/api/v1/events'))?.items ?? []
    const warnings = events.filter((e) => e.type === 'Warning').map((e) => `${e.involvedObject?.kind}/${e.involvedObject?.name} ${e.reason}: ${e.message}`)
    expect(warnings).toEqual([])
    for (const name of ['planner', 'researcher', 'publisher']) {
      const agent = await plane.kube.get<{ status?: { conditions?: Array<{ type: string; status: string; reason?: string }> } }>(`/apis/purko.io/v1alpha1/namespaces/ai-agents/agents/${name}`)
      expect(agent?.status?.conditions?.find((c) => c.type === 'ModelAvailable'), name).toMatchObject({ status: 'True', reason: 'OfflineModel' })
    }
  })

  it('stores each executed step output in the <workflow>-outputs ConfigMap', async () => {
    const cm = await plane.kube.get('/api/v1/namespaces/ai-agents/configmaps/release-notes-outputs')
    const data = (cm?.data ?? {}) as Record<string, string>
    expect(Object.keys(data).sort()).toEqual(['draft-notes', 'plan', 'publish', 'research-changes', 'research-issues'])
    expect(JSON.parse(data.plan ?? '{}')).toMatchObject({ step: 'plan', workflow: 'release-notes' })
    expect(JSON.parse(data['draft-notes'] ?? '{}').response).toContain('research-changes done')
  })

  it('deploys the bundled WorkflowRecipe to Active through its own functions and Triggers', () => {
    expect(recipe.status?.phase).toBe('Active')
    expect(recipe.status?.currentRevision).toBe(1)
    expect(recipe.status?.history?.map((h) => h.to)).toEqual(['Candidate', 'Approved', 'Pending', 'Deploying', 'Testing', 'Active'])
    const triggers = new Set(deliveries.filter((d) => d.outcome === 'delivered').map((d) => d.trigger))
    expect(triggers).toContain('workflowrecipe-changed')
    expect(triggers).toContain('recipe-child-changed')
  })

  it('puts the recipe children in sandbox-recipes, the namespace knative/platform/namespaces.yaml declares', async () => {
    const ns = await plane.kube.get(`/api/v1/namespaces/${SANDBOX}`)
    expect(ns?.metadata?.labels).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'baseline', 'app.kubernetes.io/part-of': 'kinetic' })
    const db = await plane.kube.get(`/apis/apps/v1/namespaces/${SANDBOX}/statefulsets/ai-agents-shop-db-3cbc7b1c`)
    expect((db?.status as Status).readyReplicas).toBe(1)
    const claim = await plane.kube.get(`/api/v1/namespaces/${SANDBOX}/persistentvolumeclaims/data-ai-agents-shop-db-3cbc7b1c-0`)
    expect((claim?.status as Status).phase).toBe('Bound')
    const web = await plane.kube.get(`/apis/apps/v1/namespaces/${SANDBOX}/deployments/ai-agents-shop-web-f82c014a`)
    expect((web?.status as Status).availableReplicas).toBe(1)
    const copied = await plane.kube.get(`/api/v1/namespaces/${SANDBOX}/secrets/ai-agents-shop-db-3cbc7b1c-env`)
    expect(Buffer.from(String((copied?.data as Record<string, string>).POSTGRES_PASSWORD), 'base64').toString()).toBe('change-me')
  })

  it('runs the smoke test Job as host Node.js with the wiring the templates resolved', async () => {
    expect(recipe.status?.tests?.map((t) => [t.name, t.phase])).toEqual([['smoke', 'Succeeded']])
    const job = await plane.kube.get(`/apis/batch/v1/namespaces/${SANDBOX}/jobs/ai-agents-shop-test-smoke-ee0ca366-r1`)
    expect((job?.status as Status).conditions).toContainEqual(expect.objectContaining({ type: 'Complete', status: 'True' }))
    const pods = await plane.kube.request<{ items: KubeObject[] }>('GET', `/api/v1/namespaces/${SANDBOX}/pods?labelSelector=${encodeURIComponent('job-name=ai-agents-shop-test-smoke-ee0ca366-r1')}`)
    const log = await plane.kube.text(`/api/v1/namespaces/${SANDBOX}/pods/${pods.items[0]?.metadata?.name}/log`)
    expect(log).toContain('smoke: web at http://ai-agents-shop-web-f82c014a.sandbox-recipes.svc')
  })

  it('leaves no function process behind when stopped', async () => {
    const pids = [...plane.functions.values()].map((f) => f.pid).filter((p): p is number => p !== undefined)
    expect(pids.length).toBeGreaterThan(0)
    await plane.stop()
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow()
  }, 30_000)
})
