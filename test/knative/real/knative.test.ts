// The Knative tier: a real one-node cluster (npm run cluster) with Knative Serving and Eventing
// built from the Go module registry and installed from their release configuration
// (npm run cluster -- --knative), Traefik as the ingress. Skipped in one line without the node's
// prerequisites or the Knative binaries (npm run knative:build); KINETIC_REQUIRE_KNATIVE=1 makes
// that a failure. Only one node runs on a machine at a time: stop `npm run cluster` first.
// Then Kinetic on it (kinetic.ts), a recipe (recipe.ts), purko's examples (purko.ts), the
// delivery scenario next to the emulated Broker (delivery.ts), kn against that install (kn.ts), and a
// run's trace from the functions and step pods in a real collector (traces.ts).
import { request } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { KNATIVE_DOMAIN, deploymentsNotAvailable, installKnative, knBinary, webhooksAnswer, type KnativeInstall } from '../../../cluster/knative/install.js'
import { TRAEFIK_NAMESPACE } from '../../../cluster/knative/traefik.js'
import { startNode, stopNode, type RunningNode } from '../../../cluster/node/index.js'
import type { KubeObject } from '../../../local/knative/kube-http.js'
import { freePort } from '../../../local/free-port.js'
import { eventually } from '../../support/eventually.js'
import { describeKnative, kubeBinDir } from './tier.js'
import { lockNode } from '../../support/node-lock.js'
import { kineticOnKnative } from './kinetic.js'
import { recipeOnKinetic } from './recipe.js'
import { purkoOnKinetic } from './purko.js'
import { deliveryOnKnative } from './delivery.js'
import { knOnKinetic } from './kn.js'
import { tracesOnKinetic } from './traces.js'

const NS = 'knative-tier'

interface Condition { type: string; status: string; reason?: string; message?: string }
type WithStatus = { status?: { conditions?: Condition[] } }

describeKnative('real Knative (npm run cluster -- --knative): Serving, Eventing and Traefik on a real node', () => {
  const work = mkdtempSync(join(tmpdir(), 'kinetic-knative-tier-'))
  const dir = join(work, 'node')
  let node: RunningNode
  let knative: KnativeInstall
  let ingressIp: string
  let unlock: (() => void) | undefined

  beforeAll(async () => {
    unlock = await lockNode()
    const [apiServerPort, registryPort] = [await freePort(), await freePort()]
    node = await startNode({ dir, binDir: kubeBinDir(), apiServerPort, registryPort, log: (line) => console.log(`node: ${line}`) })
    knative = await installKnative({ kubeconfig: node.kubeconfig, kubeBinDir: kubeBinDir(), registryPort, log: (line) => console.log(`knative: ${line}`) })
    const t = knative.timings
    console.log(`knative: node ${(node.timings.dnsReadyMs / 1000).toFixed(1)} s; images ${(t.imagesMs / 1000).toFixed(1)} s, applied ${(t.appliedMs / 1000).toFixed(1)} s, ready ${(t.readyMs / 1000).toFixed(1)} s`)
    const svc = await node.admin.get<{ spec: { clusterIP: string } }>(`/api/v1/namespaces/${TRAEFIK_NAMESPACE}/services/traefik`)
    ingressIp = svc?.spec.clusterIP as string
    await node.admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  }, 2_400_000)

  afterAll(async () => {
    // Some 40 containers go through containerd one by one: this takes minutes on 2 cores.
    const t0 = Date.now()
    try {
      await stopNode(dir)
    } finally {
      unlock?.()
    }
    console.log(`knative: node stopped in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    rmSync(work, { recursive: true, force: true })
  }, 600_000)

  it('runs every Serving, Eventing and Traefik Deployment Available, and both admission webhooks deny an invalid object', async () => {
    for (const ns of ['knative-serving', 'knative-eventing', TRAEFIK_NAMESPACE]) {
      const list = await node.admin.get<{ items: Array<{ metadata: { name: string }; spec: { replicas?: number }; status?: { conditions?: Condition[] } }> }>(`/apis/apps/v1/namespaces/${ns}/deployments`)
      const running = (list?.items ?? []).filter((d) => (d.spec.replicas ?? 1) > 0)
      expect(running.length, `Deployments in ${ns}`).toBeGreaterThan(0)
      const notAvailable = running.filter((d) => !d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True')).map((d) => d.metadata.name)
      expect(notAvailable, `Deployments of ${ns} not Available`).toEqual([])
    }
    const names = async (ns: string) => ((await node.admin.get<{ items: Array<{ metadata: { name: string } }> }>(`/apis/apps/v1/namespaces/${ns}/deployments`))?.items ?? []).map((d) => d.metadata.name).sort()
    expect(await names('knative-serving')).toEqual(['activator', 'autoscaler', 'controller', 'webhook'])
    expect(await names('knative-eventing')).toEqual(expect.arrayContaining(['eventing-controller', 'eventing-webhook', 'imc-controller', 'imc-dispatcher', 'mt-broker-controller', 'mt-broker-filter', 'mt-broker-ingress', 'pingsource-mt-adapter']))
    expect(await webhooksAnswer(node.admin)).toBeUndefined()
  })

  it('makes a Knative Service Ready, answers it through Traefik, scales it to zero and answers again from zero', async () => {
    await node.admin.apply(knativeService('hello', knative.images.hello as string, { 'autoscaling.knative.dev/window': '6s' }, [{ name: 'GREETING', value: 'hello from a real Knative' }]), NS)
    const ksvc = await waitReady(`/apis/serving.knative.dev/v1/namespaces/${NS}/services/hello`, 'Knative Service hello', 240_000)
    expect((ksvc as { status?: { url?: string } }).status?.url).toBe(`http://hello.${NS}.${KNATIVE_DOMAIN}`)
    expect(await eventually('hello answering through Traefik', async () => {
      const r = await viaIngress(ingressIp, `hello.${NS}.${KNATIVE_DOMAIN}`, '/').catch(() => undefined)
      return r?.status === 200 ? r.body : undefined
    }, 60_000, 500)).toBe('hello from a real Knative\n')

    await eventually('hello scaled to zero (no pod left)', async () => {
      const pods = await node.admin.get<{ items: unknown[] }>(`/api/v1/namespaces/${NS}/pods?labelSelector=serving.knative.dev%2Fservice%3Dhello`)
      return pods?.items.length === 0
    }, 300_000, 2000)
    const t0 = Date.now()
    const fromZero = await viaIngress(ingressIp, `hello.${NS}.${KNATIVE_DOMAIN}`, '/')
    console.log(`knative: hello answered from zero replicas in ${Date.now() - t0} ms`)
    expect(fromZero).toEqual({ status: 200, body: 'hello from a real Knative\n' })
  }, 600_000)

  it('delivers a PingSource\'s event through a Broker and a Trigger to a Knative Service', async () => {
    await node.admin.apply(knativeService('recorder', knative.images.hello as string, { 'autoscaling.knative.dev/min-scale': '1' }), NS)
    await node.admin.apply({ apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', metadata: { name: 'default', namespace: NS } }, NS)
    await node.admin.apply({
      apiVersion: 'eventing.knative.dev/v1', kind: 'Trigger', metadata: { name: 'pings-to-recorder', namespace: NS },
      spec: {
        broker: 'default',
        filter: { attributes: { type: 'dev.knative.sources.ping' } },
        subscriber: { ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'recorder' } },
      },
    }, NS)
    await node.admin.apply({
      apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', metadata: { name: 'every-minute', namespace: NS },
      spec: {
        schedule: '* * * * *',
        contentType: 'application/json',
        data: '{"tick":"kinetic"}',
        sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } },
      },
    }, NS)
    await waitReady(`/apis/serving.knative.dev/v1/namespaces/${NS}/services/recorder`, 'Knative Service recorder', 240_000)
    await waitReady(`/apis/eventing.knative.dev/v1/namespaces/${NS}/brokers/default`, 'Broker default', 180_000)
    await waitReady(`/apis/eventing.knative.dev/v1/namespaces/${NS}/triggers/pings-to-recorder`, 'Trigger pings-to-recorder', 180_000)
    await waitReady(`/apis/sources.knative.dev/v1/namespaces/${NS}/pingsources/every-minute`, 'PingSource every-minute', 180_000)

    const events = await eventually('the ping recorded by the Trigger\'s subscriber', async () => {
      const r = await viaIngress(ingressIp, `recorder.${NS}.${KNATIVE_DOMAIN}`, '/events').catch(() => undefined)
      const list = r?.status === 200 ? (JSON.parse(r.body) as Array<{ type: string; source: string; data: string }>) : []
      return list.length > 0 ? list : undefined
    }, 180_000, 2000)
    expect(events[0]).toMatchObject({ type: 'dev.knative.sources.ping', source: `/apis/v1/namespaces/${NS}/pingsources/every-minute`, data: '{"tick":"kinetic"}' })
  }, 600_000)

  it('names a component Deployment that cannot start with the kubelet\'s reason, as the install\'s wait reports it', async () => {
    const labels = { app: 'cannot-start' }
    await node.admin.apply({
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'cannot-start', namespace: NS },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: 'main', image: knative.images.hello as string, env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'absent-config', key: 'x' } } }] }] },
        },
      },
    }, NS)
    const gap = await eventually('the kubelet\'s reason for the pod', async () => {
      const g = await deploymentsNotAvailable(node.admin, [{ namespace: NS, name: 'cannot-start' }])
      return g?.includes('CreateContainerConfigError') ? g : undefined
    }, 120_000, 1000)
    expect(gap).toMatch(new RegExp(`^Deployment ${NS}/cannot-start not Available(: [^(]*)? \\(pod cannot-start-[a-z0-9-]+ container main: CreateContainerConfigError: configmap "absent-config" not found\\)$`))
  }, 180_000)

  /** Waits for the object's Ready condition; on timeout, names it with Knative's own reason and message. */
  async function waitReady(path: string, what: string, ms: number): Promise<KubeObject> {
    const deadline = Date.now() + ms
    let last = 'not found'
    for (;;) {
      const obj = await node.admin.get<KubeObject & WithStatus>(path).catch((e: Error) => { last = e.message; return null })
      const ready = obj?.status?.conditions?.find((c) => c.type === 'Ready')
      if (ready?.status === 'True') return obj as KubeObject
      if (ready) last = `Ready=${ready.status} ${ready.reason ?? ''}: ${ready.message ?? ''}`
      if (Date.now() > deadline) throw new Error(`${what} not Ready within ${ms / 1000} s: ${last}`)
      await new Promise((r) => setTimeout(r, 1000))
    }
  }

  const kineticTier = () => ({ admin: node.admin, kubeconfig: node.kubeconfig, registry: node.registry, kubectl: join(kubeBinDir(), 'kubectl'), work })
  kineticOnKnative(kineticTier)
  recipeOnKinetic(kineticTier)
  purkoOnKinetic(kineticTier)
  deliveryOnKnative(kineticTier)
  // After Kinetic's tests: its install and the example run are what kn shows.
  knOnKinetic(() => ({ ...kineticTier(), kn: knBinary(), eventDisplayImage: knative.images['event-display'] as string }))
  tracesOnKinetic(kineticTier)
})

function knativeService(name: string, image: string, annotations: Record<string, string>, env: Array<{ name: string; value: string }> = []): KubeObject {
  return {
    apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name },
    spec: {
      template: {
        metadata: { annotations },
        spec: {
          containers: [{
            image, env,
            securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
          }],
        },
      },
    },
  }
}

/** A GET to Traefik's Service with a Knative route's host name (no DNS for the test domain). */
function viaIngress(ip: string, host: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port: 80, path, headers: { host }, timeout: 120_000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { body += c })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('timeout', () => req.destroy(new Error(`GET http://${host}${path} via ${ip}: no answer within 120 s`)))
    req.on('error', reject)
    req.end()
  })
}
