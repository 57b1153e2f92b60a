// Template schedules on the real kube-apiserver and kube-controller-manager, with Knative's own
// PingSource CRD installed (as a cluster with Knative has it): the functions, each as its own
// ServiceAccount, make the template's PingSource; the Knative emulation ticks it; a tick
// delivered twice makes one run; an invalid schedule is reported and gets no PingSource; the
// garbage collector removes the PingSource and the runs with their template.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { ensurePingSourceKind } from '../../local/knative/pingsource-crd.js'
import { silentLogger } from '../../shared/log.js'
import { eventually } from '../support/eventually.js'
import { referenceDir } from '../support/reference.js'
import { describeCluster, useControlPlane } from './tier.js'
import { startClusterWorkflowPlane, type ClusterWorkflowPlane } from './workflow-plane.js'

const NS = 'e2e-schedules'
const WORKFLOWS = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows`
const PINGSOURCES = `/apis/sources.knative.dev/v1/namespaces/${NS}/pingsources`
const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/pingsources.sources.knative.dev'

type Condition = { type: string; status: string; reason?: string; message?: string }
type Wf = KubeObject & { status?: { phase?: string; lastScheduleTime?: string; nextRunTime?: string; conditions?: Condition[] } }
type KEvent = KubeObject & { reason?: string; type?: string; message?: string; involvedObject?: { kind?: string; name?: string; uid?: string } }

const hexOf = (time: Date) => ((Math.floor(time.getTime() / 1000) & 0xffffffff) >>> 0).toString(16).padStart(8, '0')

/** A six-field cron that fires once a year, at `at` (UTC, whole seconds). */
const onceAt = (at: Date) => `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} ${at.getUTCDate()} ${at.getUTCMonth() + 1} *`

const aTemplate = (name: string, schedule: Record<string, unknown>) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
  metadata: { name, namespace: NS, annotations: { 'purko.io/template': 'true' } },
  spec: { description: `The ${name} template`, trigger: { schedule }, steps: [{ name: 'check', agentRef: { name: 'echo' }, input: { task: 'check' } }] },
})

describeCluster('template schedules on a real kube-apiserver with Knative\'s PingSource CRD', () => {
  const cp = useControlPlane({ controllerManager: true, auditLog: true })
  let w: ClusterWorkflowPlane
  const admin = () => w.admin

  beforeAll(async () => {
    // Knative's CRD, as `kubectl apply -f` of Knative's release installs it.
    const file = join(referenceDir(), 'knative', 'crds', 'pingsource.yaml')
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const crd = doc.toJSON() as KubeObject | null
      if (crd?.kind === 'CustomResourceDefinition') await cp.current.admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
    }
    await eventually('Knative\'s PingSource CRD to be Established', async () => {
      const crd = await cp.current.admin.get(CRD_PATH)
      return ((crd?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True')
    })
    w = await startClusterWorkflowPlane(cp.current)
    // Ticks only on the templates' own schedules (the tier fast-forwards PingSources by default).
    w.plane.knative.setPingInterval(undefined)
    await w.namespace(NS)
  }, 180_000)

  afterAll(async () => {
    const warnings = w?.functionWarnings() ?? []
    if (warnings.length > 0) console.log(`Function warnings:\n${warnings.join('\n')}`)
    await w?.stop()
  }, 60_000)

  const runsOf = async (template: string) =>
    (await admin().request<{ items: Wf[] }>('GET', `${WORKFLOWS}?labelSelector=${encodeURIComponent(`kinetic.dev/template=${template}`)}`)).items

  it('keeps Knative\'s PingSource CRD: the plane installs its own only where none is served', async () => {
    expect(await ensurePingSourceKind(admin(), silentLogger)).toBe('served')
    const crd = await admin().request('GET', CRD_PATH)
    expect(crd.metadata?.labels).toMatchObject({ 'app.kubernetes.io/name': 'knative-eventing' })
  })

  it('makes the template\'s PingSource as the function\'s own ServiceAccount; a tick delivered twice makes one run', async () => {
    // A fire a little after the template exists, so it is a fire of this template's life.
    const fire = new Date(Math.ceil((Date.now() + 25_000) / 1000) * 1000)
    const cron = onceAt(fire)
    const tpl = await admin().request('POST', WORKFLOWS, aTemplate('nightly', { cron }))
    const ps = await eventually('the template\'s PingSource', () => admin().get(`${PINGSOURCES}/nightly-schedule`).then((p) => p ?? undefined), 60_000, 250)
    expect(ps.metadata?.ownerReferences).toEqual([expect.objectContaining({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'nightly', uid: tpl.metadata?.uid, controller: true })])
    expect((ps.spec as { schedule: string }).schedule).toBe(cron)

    // Who wrote it: a function's ServiceAccount, never the installing admin.
    const writers = new Set(cp.current.auditEvents()
      .filter((e) => e.objectRef?.resource === 'pingsources' && e.objectRef.namespace === NS && ['create', 'patch', 'update'].includes(e.verb) && (e.responseStatus?.code ?? 0) < 300)
      .map((e) => e.user.username))
    const identities = new Set([...w.plane.functions.values()].map((f) => f.identity))
    expect(writers.size).toBeGreaterThan(0)
    for (const user of writers) {
      expect(user).toMatch(/^system:serviceaccount:kinetic-system:/)
      expect(identities.has(user)).toBe(true)
    }

    await eventually('the emulation to run the PingSource', () => w.plane.knative.runtimePingSources().includes(`${NS}/nightly-schedule`), 30_000)
    // Every delivery to the schedule function arrives twice from now on (a lost acknowledgement).
    let duplicated = 0
    w.plane.knative.setFault(({ event }) => {
      if (event.type !== 'dev.knative.sources.ping' || event.source !== `/apis/v1/namespaces/${NS}/pingsources/nightly-schedule`) return 'deliver'
      duplicated += 1
      return 'duplicate'
    })
    const run = await eventually('the run of the fire', async () => (await runsOf('nightly'))[0], 90_000, 250)
    expect(run.metadata?.name).toBe(`nightly-sched-${hexOf(fire)}`)
    // The same tick once more, twice over: still the one run.
    expect(await w.plane.knative.firePing(`${NS}/nightly-schedule`)).toBe(202)
    expect(duplicated).toBeGreaterThanOrEqual(1)
    expect((await runsOf('nightly')).map((r) => r.metadata?.name)).toEqual([`nightly-sched-${hexOf(fire)}`])
    const template = await eventually('lastScheduleTime on the template', async () => {
      const t = (await admin().request('GET', `${WORKFLOWS}/nightly`)) as Wf
      return t.status?.lastScheduleTime ? t : undefined
    })
    expect(Date.parse(template.status!.lastScheduleTime!)).toBe(fire.getTime())
    w.plane.knative.setFault(undefined)

    // The garbage collector removes what the template owns.
    await admin().request('DELETE', `${WORKFLOWS}/nightly`)
    await eventually('the PingSource to go with its template', async () => (await admin().get(`${PINGSOURCES}/nightly-schedule`)) === null, 60_000, 250)
    await eventually('the run to go with its template', async () => (await runsOf('nightly')).length === 0, 60_000, 250)
    await eventually('the emulation to stop ticking it', () => !w.plane.knative.runtimePingSources().includes(`${NS}/nightly-schedule`), 30_000)
  }, 240_000)

  it('reports an invalid cron and an unknown time zone on the template (ScheduleValid=False, a Warning Event) and makes no PingSource', async () => {
    await admin().request('POST', WORKFLOWS, aTemplate('broken', { cron: 'every tuesday' }))
    await admin().request('POST', WORKFLOWS, aTemplate('martian', { cron: '0 3 * * *', timezone: 'Mars/Olympus' }))
    for (const [name, reason] of [['broken', 'InvalidSchedule'], ['martian', 'UnknownTimeZone']] as const) {
      const tpl = await eventually(`${name}: ScheduleValid=False`, async () => {
        const t = (await admin().request('GET', `${WORKFLOWS}/${name}`)) as Wf
        return t.status?.conditions?.find((c) => c.type === 'ScheduleValid' && c.status === 'False') ? t : undefined
      }, 60_000, 250)
      expect(tpl.status?.conditions?.find((c) => c.type === 'ScheduleValid')?.reason).toBe(reason)
      const events = await eventually(`${name}: a Warning Event`, async () => {
        const list = await admin().request<{ items: KEvent[] }>('GET', `/api/v1/namespaces/${NS}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${name}`)}`)
        const warnings = list.items.filter((e) => e.type === 'Warning' && e.reason === reason)
        return warnings.length > 0 ? warnings : undefined
      }, 60_000, 250)
      expect(events[0]?.involvedObject).toMatchObject({ kind: 'Workflow', name, uid: tpl.metadata?.uid })
      expect(await admin().get(`${PINGSOURCES}/${name}-schedule`)).toBeNull()
    }
    expect(w.plane.knative.runtimePingSources().filter((k) => k.startsWith(`${NS}/`))).toEqual([])
  }, 120_000)
})
