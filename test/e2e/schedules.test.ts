// A scheduled template on the embedded local plane, with nothing fast-forwarded: the template's
// PingSource ticks on its own six-field cron (every three seconds), the Knative emulation serves it
// like any PingSource made at run time, and the real functions turn the ticks into runs.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'
import { eventually } from '../support/eventually.js'

const ROOT = join(import.meta.dirname, '../..')
const NS = 'schedules-e2e'
const TEMPLATE = 'heartbeat'
const CRON = '*/3 * * * * *'
const WORKFLOWS = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows`
const TEMPLATE_PATH = `${WORKFLOWS}/${TEMPLATE}`
const PINGSOURCE_PATH = `/apis/sources.knative.dev/v1/namespaces/${NS}/pingsources/${TEMPLATE}-schedule`
const TERMINAL = ['Succeeded', 'Failed', 'Cancelled', 'CompletedWithErrors']

type RecentRun = { name: string; phase?: string; trigger?: string; startTime?: string; completionTime?: string }
type Wf = KubeObject & {
  spec: { steps: Array<{ name: string; input?: Record<string, unknown> }> }
  status?: { phase?: string; completionTime?: string; lastScheduleTime?: string; nextRunTime?: string; lastTriggerTime?: string; recentRuns?: RecentRun[]; conditions?: Array<{ type: string; status: string; reason?: string }> }
}

let plane: LocalPlane

const template = {
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
  metadata: { name: TEMPLATE, namespace: NS, annotations: { 'purko.io/template': 'true' } },
  spec: {
    description: 'Check in every three seconds',
    trigger: { schedule: { cron: CRON }, successfulRunsHistoryLimit: 2 },
    steps: [{ name: 'check', agentRef: { name: 'writer' }, input: { task: 'Say that all is well' } }],
  },
}

async function runs(): Promise<Wf[]> {
  const list = await plane.kube.request<{ items: Wf[] }>('GET', `${WORKFLOWS}?labelSelector=${encodeURIComponent(`kinetic.dev/template=${TEMPLATE}`)}`)
  return list.items
}
const hexOf = (time: string) => ((Math.floor(Date.parse(time) / 1000) & 0xffffffff) >>> 0).toString(16).padStart(8, '0')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

beforeAll(async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-schedules-e2e-'))
  plane = await startLocalPlane({ root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs') })
  await plane.kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  // The executor's offline provider answers without a network.
  await plane.kube.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer', namespace: NS }, spec: { model: { provider: 'offline', name: 'scripted' } } })
  await plane.kube.apply(template)
}, 120_000)

afterAll(async () => {
  await plane?.stop()
}, 30_000)

describe('a scheduled template on the local plane', () => {
  it('gets its PingSource, owned by the template, ticking on the template\'s cron toward the Broker', async () => {
    const tpl = (await plane.kube.request('GET', TEMPLATE_PATH)) as Wf
    const ps = await eventually('the template\'s PingSource', () => plane.kube.get(PINGSOURCE_PATH).then((p) => p ?? undefined), 30_000)
    expect(ps.metadata?.ownerReferences).toEqual([expect.objectContaining({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: TEMPLATE, uid: tpl.metadata?.uid, controller: true })])
    expect(ps.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'kinetic', 'kinetic.dev/template': TEMPLATE })
    const spec = ps.spec as { schedule: string; contentType: string; data: string; ceOverrides: { extensions: Record<string, string> }; sink: { uri: string } }
    expect(spec.schedule).toBe(CRON)
    expect(spec.contentType).toBe('application/json')
    expect(JSON.parse(spec.data)).toEqual({ namespace: NS, name: TEMPLATE, uid: tpl.metadata?.uid })
    expect(spec.ceOverrides.extensions.kineticsource).toBe('schedule')
    // The function's KINETIC_EVENT_SINK: the local Broker's ingress.
    expect(spec.sink.uri).toBe(plane.knative.brokerUrl('kinetic-system', 'default'))
    await eventually('the emulation to run it', () => plane.knative.runtimePingSources().includes(`${NS}/${TEMPLATE}-schedule`))
  }, 60_000)

  it('starts runs on the schedule, named after their fire time, which run to Succeeded', async () => {
    const succeeded = await eventually('two scheduled runs to succeed', async () => {
      const done = (await runs()).filter((r) => r.status?.phase === 'Succeeded')
      return done.length >= 2 ? done : undefined
    }, 120_000, 500)
    for (const run of succeeded) {
      const annotations = run.metadata?.annotations ?? {}
      expect(annotations['purko.io/workflow-template']).toBe(TEMPLATE)
      expect(annotations['purko.io/trigger-type']).toBe('schedule')
      expect(annotations['purko.io/trigger-source']).toBe(CRON)
      const fired = annotations['kinetic.dev/scheduled-time'] as string
      // A fire of */3, no later than the run itself, and the run's name carries it.
      expect(new Date(fired).getUTCSeconds() % 3).toBe(0)
      expect(Date.parse(fired)).toBeLessThanOrEqual(Date.parse(run.metadata?.creationTimestamp ?? ''))
      expect(run.metadata?.name).toBe(`${TEMPLATE}-sched-${hexOf(fired)}`)
      expect(run.spec).not.toHaveProperty('trigger')
      expect(run.spec.steps[0]?.input).toEqual({ schedule: CRON, task: 'Check in every three seconds', timestamp: fired.replace(/\.\d{3}Z$/, 'Z'), trigger: 'schedule' })
    }
  }, 150_000)

  it('shows the schedule on the template: lastScheduleTime, nextRunTime after it, and the recent runs', async () => {
    const tpl = await eventually('recent runs on the template', async () => {
      const t = (await plane.kube.request('GET', TEMPLATE_PATH)) as Wf
      return (t.status?.recentRuns ?? []).some((r) => r.phase === 'Succeeded') && t.status?.nextRunTime ? t : undefined
    }, 60_000, 500)
    const status = tpl.status!
    expect(Date.parse(status.nextRunTime!)).toBeGreaterThan(Date.parse(status.lastScheduleTime!))
    expect(new Date(status.nextRunTime!).getUTCSeconds() % 3).toBe(0)
    expect(status.recentRuns!.length).toBeLessThanOrEqual(10)
    for (const r of status.recentRuns!) expect(r.name).toMatch(new RegExp(`^${TEMPLATE}-sched-[0-9a-f]{8}$`))
    expect(status.conditions?.find((c) => c.type === 'ScheduleValid')?.status).not.toBe('False')
  }, 90_000)

  it('keeps at most successfulRunsHistoryLimit succeeded runs, deleting the oldest', async () => {
    const seen = new Map<string, string>()
    // A run that just succeeded may stand beside the limit until the template is reconciled.
    const pruned = await eventually('a succeeded run pruned, and no more than the limit left', async () => {
      const all = await runs()
      const now = new Set(all.map((r) => r.metadata?.name ?? ''))
      for (const r of all) if (r.status?.phase === 'Succeeded') seen.set(r.metadata?.name ?? '', r.status?.completionTime ?? '')
      const gone = [...seen.keys()].filter((n) => !now.has(n))
      return gone.length > 0 && all.filter((r) => r.status?.phase === 'Succeeded').length <= 2 ? { gone, all } : undefined
    }, 90_000, 300)
    // The runs that finished first go first (under load a later fire can finish before an earlier one).
    const kept = pruned.all.filter((r) => r.status?.phase === 'Succeeded').map((r) => r.status?.completionTime ?? '')
    for (const g of pruned.gone) for (const k of kept) expect(Date.parse(seen.get(g)!)).toBeLessThanOrEqual(Date.parse(k))
  }, 120_000)

  it('stops when suspended: the PingSource goes and no run starts any more', async () => {
    await plane.kube.mergePatch(TEMPLATE_PATH, { spec: { trigger: { schedule: { suspend: true } } } })
    await eventually('the PingSource to be deleted', async () => (await plane.kube.get(PINGSOURCE_PATH)) === null, 30_000)
    await eventually('the emulation to stop it', () => !plane.knative.runtimePingSources().includes(`${NS}/${TEMPLATE}-schedule`))
    // A tick already sent may still be turned into a run; then nothing new for several periods.
    await sleep(2500)
    const before = new Set((await runs()).map((r) => r.metadata?.name))
    await sleep(6000)
    const after = (await runs()).map((r) => r.metadata?.name)
    expect(after.filter((n) => !before.has(n))).toEqual([])
  }, 60_000)

  it('removes the PingSource and the runs with the template (the embedded API server collects owned objects)', async () => {
    // Let the runs finish first, so nothing is mid-write.
    await eventually('every run to finish', async () => (await runs()).every((r) => TERMINAL.includes(r.status?.phase ?? '')), 60_000, 500)
    await plane.kube.mergePatch(TEMPLATE_PATH, { spec: { trigger: { schedule: { suspend: false } } } })
    await eventually('the PingSource back after resuming', () => plane.kube.get(PINGSOURCE_PATH).then((p) => p ?? undefined), 30_000)
    await plane.kube.request('DELETE', TEMPLATE_PATH)
    await eventually('the PingSource to go with the template', async () => (await plane.kube.get(PINGSOURCE_PATH)) === null, 30_000)
    await eventually('the runs to go with the template', async () => (await runs()).length === 0, 30_000)
    await eventually('the emulation to stop ticking it', () => !plane.knative.runtimePingSources().includes(`${NS}/${TEMPLATE}-schedule`))
  }, 120_000)
})
