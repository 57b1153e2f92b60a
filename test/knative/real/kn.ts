// `kn` as Kinetic's users use it, on the tier's node once Kinetic is installed and the example has
// run (registered after kinetic.ts's tests, so there is no second install): `kn service list`,
// `kn source list`, `kn trigger list` and `kn broker describe` show Kinetic's objects Ready,
// `kn kinetic` runs as a real kn plugin found on PATH, and README's event-display Trigger
// (examples/knative/event-display.yaml) shows the dev.kinetic.* CloudEvents of a run.
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { waitFor } from '../../../cluster/knative/install.js'
import { REPO_ROOT } from '../../../local/jobs/step-process.js'
import { KINETIC_EVENT_PREFIX } from '../../../shared/engine/kinetic-events.js'
import { eventually } from '../../support/eventually.js'
import { loadManifests } from '../manifests.js'
import { oneStep, type KineticTier } from './kinetic.js'

const run = promisify(execFile)
const SYSTEM = 'kinetic-system'
const NS = 'ai-agents'

/** What these tests need beyond Kinetic's tier: the built kn and the node's event_display image. */
export interface KnTier extends KineticTier {
  kn: string
  eventDisplayImage: string
}

interface Condition { type: string; status: string; reason?: string; message?: string }
interface KnObject { kind?: string; metadata: { name: string; labels?: Record<string, string> }; status?: { conditions?: Condition[] } }

/** `<name>: <reason>: <message>` of each object whose Ready condition is not True. */
export function notReadyIn(objects: KnObject[], name: (o: KnObject) => string = (o) => o.metadata.name): string[] {
  return objects.flatMap((o) => {
    const ready = o.status?.conditions?.find((c) => c.type === 'Ready')
    return ready?.status === 'True' ? [] : [`${name(o)}: ${ready ? `${ready.reason ?? ''}: ${ready.message ?? ''}` : 'no Ready condition'}`]
  })
}

/** The blocks event_display printed (`☁️  cloudevents.Event` then `Context Attributes,`), as their attributes. */
export function displayedEvents(log: string): Array<Record<string, string>> {
  return log.split('Context Attributes,\n').slice(1).map((block) => {
    const attributes: Record<string, string> = {}
    for (const line of block.split('\n')) {
      const m = /^ {2}([a-z0-9]+): (.*)$/.exec(line)
      if (!m) break
      attributes[m[1]!] = m[2]!
    }
    return attributes
  })
}

/** What README's `sed 's|image: event-display|image: <image>|'` makes of the example: the first match on each line replaced. */
export function withImage(manifest: string, image: string): string {
  return manifest.split('\n').map((line) => line.replace('image: event-display', `image: ${image}`)).join('\n')
}

/** Registers the kn tests; `tier()` is called once they run. */
export function knOnKinetic(tier: () => KnTier): void {
  const kn = async (...args: string[]) => (await run(tier().kn, ['--kubeconfig', tier().kubeconfig, ...args], { maxBuffer: 16 * 1024 * 1024 })).stdout
  const knJson = async <T>(...args: string[]) => JSON.parse(await kn(...args, '-o', 'json')) as T
  const kubectl = async (...args: string[]) => (await run(tier().kubectl, ['--kubeconfig', tier().kubeconfig, ...args], { maxBuffer: 16 * 1024 * 1024 })).stdout
  // What install.yaml puts in kinetic-system, read from knative/ (the Components are opt-in).
  const shipped = loadManifests().filter((m) => m.namespace === SYSTEM && !m.file.startsWith('components/') && /knative\.dev\//.test(m.apiVersion))
  const shippedNames = (...kinds: string[]) => shipped.filter((m) => kinds.includes(m.kind)).map((m) => m.name).sort()

  /** What the Service's Revisions and pods say (conditions not True, pod phase, container states), for a failure message. */
  const whyNoRevision = async (service: string): Promise<string[]> => {
    const selector = `serving.knative.dev%2Fservice%3D${service}`
    type Pod = KnObject & { status?: { phase?: string; conditions?: Condition[]; containerStatuses?: Array<{ name: string; state?: Record<string, { reason?: string; message?: string; exitCode?: number }> }> } }
    const revisions = (await tier().admin.get<{ items: KnObject[] }>(`/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/revisions?labelSelector=${selector}`))?.items ?? []
    const pods = (await tier().admin.get<{ items: Pod[] }>(`/api/v1/namespaces/${SYSTEM}/pods?labelSelector=${selector}`))?.items ?? []
    return [
      ...revisions.flatMap((r) => (r.status?.conditions ?? []).filter((c) => c.status !== 'True').map((c) => `Revision ${r.metadata.name} ${c.type}=${c.status} ${c.reason ?? ''}: ${c.message ?? ''}`)),
      ...pods.map((p) => `pod ${p.metadata.name} ${p.status?.phase ?? ''} ${JSON.stringify([
        ...(p.status?.conditions ?? []).filter((c) => c.status !== 'True').map((c) => `${c.type}: ${c.reason ?? ''} ${c.message ?? ''}`),
        ...(p.status?.containerStatuses ?? []).map((c) => `${c.name}: ${JSON.stringify(c.state)}`),
      ])}`),
      ...(pods.length === 0 ? ['no pod'] : []),
    ]
  }

  it('kn service list, kn source list, kn trigger list and kn broker describe show every Knative object of Kinetic, each Ready', async () => {
    const services = (await knJson<{ items: KnObject[] }>('service', 'list', '-n', SYSTEM)).items
    expect(services.map((s) => s.metadata.name).sort(), 'kn service list').toEqual(shippedNames('Service'))
    expect(notReadyIn(services), 'Services kn service list shows not Ready').toEqual([])

    const sources = (await knJson<{ items: KnObject[] }>('source', 'list', '-n', SYSTEM)).items
    const kindName = (o: { kind?: string; name: string }) => `${o.kind}/${o.name}`
    // Besides what knative/ ships, a tick's alarm while it has work coming (docs/architecture/idle.md), also Ready.
    const alarm = (s: KnObject) => s.kind === 'PingSource' && s.metadata.labels?.['kinetic.dev/alarm'] !== undefined && s.metadata.name.endsWith('-alarm')
    expect(sources.filter((s) => !alarm(s)).map((s) => kindName({ kind: s.kind, name: s.metadata.name })).sort(), 'kn source list')
      .toEqual(shipped.filter((m) => ['ApiServerSource', 'PingSource'].includes(m.kind)).map(kindName).sort())
    expect(notReadyIn(sources, (o) => kindName({ kind: o.kind, name: o.metadata.name })), 'sources kn source list shows not Ready').toEqual([])

    const triggers = (await knJson<{ items: KnObject[] }>('trigger', 'list', '-n', SYSTEM)).items
    expect(triggers.map((t) => t.metadata.name).sort(), 'kn trigger list').toEqual(shippedNames('Trigger'))
    expect(notReadyIn(triggers), 'Triggers kn trigger list shows not Ready').toEqual([])

    const broker = await knJson<KnObject>('broker', 'describe', 'default', '-n', SYSTEM)
    expect(broker.metadata.name).toBe('default')
    expect(notReadyIn([broker]), 'kn broker describe default').toEqual([])

    // The tables people read name the same objects; each row says Ready True.
    for (const [args, names] of [
      [['service', 'list'], shippedNames('Service')],
      [['source', 'list'], shippedNames('ApiServerSource', 'PingSource')],
      [['trigger', 'list'], shippedNames('Trigger')],
    ] as const) {
      const rows = (await kn(...args, '-n', SYSTEM)).split('\n')
      const missing = names.filter((n) => !rows.some((r) => r.startsWith(`${n} `) && /\sTrue(\s|$)/.test(r)))
      expect(missing, `rows of kn ${args.join(' ')} without READY True`).toEqual([])
    }
    expect(await kn('broker', 'describe', 'default', '-n', SYSTEM)).toMatch(/^\s*\+{2}\s+Ready\s/m)
  }, 120_000)

  it('kn kinetic runs as a kn plugin: kn finds kn-kinetic on PATH and prints the CLI\'s own status of the example run', async () => {
    const plugins = join(tier().work, 'kn-plugins')
    mkdirSync(plugins, { recursive: true })
    symlinkSync(join(REPO_ROOT, 'bin', 'kinetic.mjs'), join(plugins, 'kn-kinetic'))
    // As after `npm install -g` of the CLI tarball: kn-kinetic on PATH (and node for its #! line).
    const env = { ...process.env, PATH: [plugins, dirname(process.execPath), process.env.PATH ?? ''].join(delimiter) }
    const viaKn = async (...args: string[]) => (await run(tier().kn, args, { env, maxBuffer: 16 * 1024 * 1024 })).stdout
    const direct = async (...args: string[]) => (await run(process.execPath, [join(REPO_ROOT, 'bin', 'kinetic.mjs'), ...args], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 })).stdout

    expect(await viaKn('plugin', 'list')).toContain(`kn-kinetic : ${join(plugins, 'kn-kinetic')}`)
    expect(await viaKn('kinetic', '--help')).toContain('kn kinetic <command>')
    const status = ['status', 'release-notes', '-n', NS, '--kubeconfig', tier().kubeconfig]
    // The run is over: the only difference may be how long ago it started and finished.
    const withoutAgo = (text: string) => text.split('\n').filter((l) => !/^\s+started /.test(l)).join('\n')
    const shown = await viaKn('kinetic', ...status)
    expect(withoutAgo(shown)).toBe(withoutAgo(await direct(...status)))
    expect(shown).toMatch(/Succeeded/)
    for (const step of ['plan', 'research-changes', 'research-issues', 'draft-notes', 'publish', 'deep-audit']) expect(shown).toContain(step)
    expect(JSON.parse(await viaKn('kinetic', ...status, '-o', 'json'))).toEqual(JSON.parse(await direct(...status, '-o', 'json')))
  }, 120_000)

  it('a Trigger to event_display, added as README says, shows the dev.kinetic.* CloudEvents of a run and nothing else', async () => {
    // README's step: the example manifest with the image set, applied with kubectl.
    const manifest = join(tier().work, 'event-display.yaml')
    const text = readFileSync(join(REPO_ROOT, 'examples', 'knative', 'event-display.yaml'), 'utf8')
    expect(text).toContain('image: event-display')
    writeFileSync(manifest, withImage(text, tier().eventDisplayImage))
    await kubectl('apply', '-f', manifest)
    await waitFor('event-display and its Trigger Ready', 240_000, async () => {
      const objects = await Promise.all([
        `/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services/event-display`,
        `/apis/eventing.knative.dev/v1/namespaces/${SYSTEM}/triggers/kinetic-events-to-event-display`,
      ].map((path) => tier().admin.get<KnObject & { kind: string }>(path)))
      const gaps = objects.flatMap((o) => (o ? notReadyIn([o], (x) => `${x.kind} ${x.metadata.name}`) : ['not found']))
      return gaps.length === 0 ? undefined : [...gaps, ...await whyNoRevision('event-display')].join('; ')
    })

    await tier().admin.apply(oneStep('watched'), NS)
    const subject = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/watched`
    const wanted = ['workflow.run.started', 'workflow.step.started', 'workflow.step.finished', 'workflow.run.finished'].map((t) => `${KINETIC_EVENT_PREFIX}${t}`)
    let shown: Array<Record<string, string>> = []
    await eventually('event_display printing the run\'s events', async () => {
      const log = await kubectl('logs', '-n', SYSTEM, '-l', 'serving.knative.dev/service=event-display', '-c', 'user-container', '--tail=-1')
      shown = displayedEvents(log)
      const types = new Set(shown.filter((e) => e.subject === subject).map((e) => e.type))
      return wanted.every((t) => types.has(t)) || undefined
    }, 240_000, 2000)
    const types = new Set(shown.filter((e) => e.subject === subject).map((e) => e.type))
    expect([...types].sort()).toEqual(expect.arrayContaining(wanted))
    // The prefix filter: the run's ApiServerSource events (dev.knative.apiserver.*) are not shown.
    expect(shown.filter((e) => !e.type?.startsWith(KINETIC_EVENT_PREFIX)).map((e) => e.type)).toEqual([])
    const finished = shown.find((e) => e.subject === subject && e.type === `${KINETIC_EVENT_PREFIX}workflow.run.finished`)
    expect(finished?.datacontenttype).toBe('application/json')
  }, 420_000)
}
