// A test's stand-in served in the tier's cluster and read through the API server's service proxy,
// and `post` to a Service's cluster IP from the test process (the ingresses): the tier's node runs
// on this machine, so kube-proxy's rules route a ClusterIP from here as from a pod (no DNS for
// cluster names here).
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { request } from 'node:http'
import { basename } from 'node:path'
import { deploymentsNotAvailable, waitFor } from '../../../cluster/knative/install.js'
import type { KubeHttp } from '../../../local/knative/kube-http.js'

/** GET http://<ip>:<port><path>, parsed as JSON; rejects on a status other than 200. */
function getJson(ip: string, path: string, port = 80): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port, path, timeout: 10_000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { body += c })
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${path}: ${res.statusCode}`))
        try {
          resolve(JSON.parse(body))
        } catch (err) {
          reject(err)
        }
      })
    })
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer`)))
    req.on('error', reject)
    req.end()
  })
}

/** POST `body` to http://<ip>:80<path> with `headers`; resolves with the status. */
export function post(ip: string, path: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port: 80, path, method: 'POST', headers, timeout: 120_000 }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('timeout', () => req.destroy(new Error(`POST ${path}: no answer within 120 s`)))
    req.on('error', reject)
    req.end(body)
  })
}

/** What `serveNodeScript` runs: one script file of ours, started by the released image's `node`. */
export interface NodeScriptService {
  namespace: string
  name: string
  /** The released image (it has `node`). */
  image: string
  script: string
  env: Array<{ name: string; value: string }>
  /** A GET path that answers 200 once the script listens (the readiness probe). */
  readyPath: string
}

/** A stand-in served in the cluster: `get` reads one of its paths through the API server's service proxy. */
export interface ServedScript {
  get(path: string): Promise<unknown>
}

/**
 * Runs a test's stand-in (a model API, an event recorder) as the tier runs any workload: the script
 * in a ConfigMap, a Deployment of the released image running it as a non-root user on port 8080,
 * and a Service on port 80. Resolves once the Deployment is Available (a pod that cannot start
 * fails the wait with the kubelet's reason) and a pod has reached the Service by its cluster DNS
 * name, as the pods under test will. The test process reads it through the API server's service
 * proxy, not the cluster IP: in CI the cluster IP twice did not answer from the host for 180 s
 * while its pod answered and kube-proxy's rules were there (cause not found), and the host's path
 * is no part of what the tier proves.
 */
export async function serveNodeScript(admin: KubeHttp, s: NodeScriptService): Promise<ServedScript> {
  const labels = { app: s.name }
  const file = basename(s.script)
  await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: s.namespace } })
  await admin.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: s.name, namespace: s.namespace }, data: { [file]: readFileSync(s.script, 'utf8') } }, s.namespace)
  await admin.apply({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: s.name, namespace: s.namespace },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [{
            name: 'main', image: s.image, command: ['node', `/script/${file}`],
            env: [{ name: 'PORT', value: '8080' }, ...s.env],
            readinessProbe: { httpGet: { path: s.readyPath, port: 8080 }, periodSeconds: 1 },
            volumeMounts: [{ name: 'script', mountPath: '/script' }],
            securityContext: NON_ROOT,
          }],
          volumes: [{ name: 'script', configMap: { name: s.name } }],
        },
      },
    },
  }, s.namespace)
  await admin.apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: s.name, namespace: s.namespace }, spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] } }, s.namespace)
  await waitFor(`${s.namespace}/${s.name} Available`, 180_000, () => deploymentsNotAvailable(admin, [{ namespace: s.namespace, name: s.name }]))
  await reachedFromAPod(admin, s)
  const proxy = `/api/v1/namespaces/${s.namespace}/services/${s.name}:80/proxy`
  return { get: async (path) => JSON.parse(await admin.text(`${proxy}${path}`)) as unknown }
}

const NON_ROOT = { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } }

/** What the reaching pod runs: GET its argument until it answers 200, for up to 150 s; the exit code says whether it did. */
const REACH = `const url = process.argv[1]; const end = Date.now() + 150000; let last = '';
(async () => { for (;;) {
  try { const r = await fetch(url, { signal: AbortSignal.timeout(5000) }); if (r.ok) { console.log('answered'); process.exit(0) } last = 'status ' + r.status }
  catch (e) { last = String((e.cause && e.cause.code) || e.message) }
  if (Date.now() > end) { console.log('no answer from ' + url + ': ' + last); process.exit(1) }
  await new Promise((r) => setTimeout(r, 1000)) } })()`

/**
 * A Job whose pod GETs the Service by its cluster DNS name until it answers: CoreDNS and
 * kube-proxy's rules for the ready pod are in place for pods. Fails with the pod's last error and
 * what stands between the cluster IP and the pod.
 */
async function reachedFromAPod(admin: KubeHttp, s: NodeScriptService): Promise<void> {
  const name = `${s.name}-reached`
  const url = `http://${s.name}.${s.namespace}.svc.cluster.local${s.readyPath}`
  await admin.apply({
    apiVersion: 'batch/v1', kind: 'Job', metadata: { name, namespace: s.namespace },
    spec: {
      backoffLimit: 0,
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: s.image, command: ['node', '-e', REACH, url], securityContext: NON_ROOT }] } },
    },
  }, s.namespace)
  let failed = false
  await waitFor(`a pod of ${s.namespace} reaching ${url}`, 240_000, async () => {
    const job = await admin.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(`/apis/batch/v1/namespaces/${s.namespace}/jobs/${name}`)
    const done = job?.status?.conditions?.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')
    failed = done?.type === 'Failed'
    return done ? undefined : 'Job not finished'
  })
  if (failed) {
    const pods = await admin.get<{ items: Array<{ metadata: { name: string } }> }>(`/api/v1/namespaces/${s.namespace}/pods?labelSelector=${encodeURIComponent(`job-name=${name}`)}`)
    const pod = pods?.items[0]?.metadata.name
    const log = pod ? await admin.text(`/api/v1/namespaces/${s.namespace}/pods/${pod}/log`).catch((err: Error) => err.message) : 'no pod'
    const ip = (await admin.get<{ spec: { clusterIP: string } }>(`/api/v1/namespaces/${s.namespace}/services/${s.name}`))?.spec.clusterIP ?? '?'
    throw new Error(`${s.namespace}/${s.name}: a pod did not reach ${url} (${log.trim()}; ${await whyNoAnswer(admin, s, ip)})`)
  }
  await admin.send('DELETE', `/apis/batch/v1/namespaces/${s.namespace}/jobs/${name}?propagationPolicy=Background`)
}

/** What stands between the Service's cluster IP and its ready pod: the EndpointSlice, the pod itself, kube-proxy's rules and process, conntrack. */
async function whyNoAnswer(admin: KubeHttp, s: NodeScriptService, ip: string): Promise<string> {
  const slices = await admin.get<{ items: Array<{ endpoints?: Array<{ addresses: string[]; conditions?: { ready?: boolean } }> }> }>(
    `/apis/discovery.k8s.io/v1/namespaces/${s.namespace}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${s.name}`)}`)
  const endpoints = (slices?.items ?? []).flatMap((i) => i.endpoints ?? []).map((e) => `${e.addresses.join('/')}${e.conditions?.ready ? ' ready' : ' not ready'}`)
  const pods = await admin.get<{ items: Array<{ metadata: { name: string }; status?: { podIP?: string } }> }>(`/api/v1/namespaces/${s.namespace}/pods?labelSelector=${encodeURIComponent(`app=${s.name}`)}`)
  const podIp = pods?.items[0]?.status?.podIP
  const direct = podIp ? await getJson(podIp, s.readyPath, 8080).then(() => 'answers', (err: Error) => err.message) : 'no pod IP'
  return [
    `endpoints: ${endpoints.join(', ') || 'none'}`,
    `pods: ${(pods?.items ?? []).map((p) => `${p.metadata.name} ${p.status?.podIP ?? '?'}`).join(', ')}`,
    `pod ${podIp ?? '?'}:8080 from the host: ${direct}`,
    `cluster IP from the host: ${await getJson(ip, s.readyPath).then(() => 'answers', (err: Error) => err.message)}`,
    `route: ${run('ip', ['route', 'get', ip])}`,
    `nat: ${serviceRules(run('iptables-save', ['-t', 'nat']), ip)}`,
    `filter: ${run('iptables-save', ['-t', 'filter']).split('\n').filter((l) => l.includes(`${ip}/32`)).join(' | ') || 'none'}`,
    `conntrack: ${run('conntrack', ['-L', '-d', ip]).split('\n').slice(0, 4).join(' | ')}`,
    `kube-proxy: ${kubeProxyState()}`,
  ].join('; ')
}

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return r.status === 0 ? r.stdout.trim() : `${cmd} failed: ${(r.stderr ?? '').trim() || r.error?.message}`
}

/** The nat rules a connection to `ip` passes: the OUTPUT jump, the Service's rule, its chain, and the endpoint chains' DNAT targets. */
export function serviceRules(save: string, ip: string): string {
  const lines = save.split('\n')
  const output = lines.some((l) => /^-A OUTPUT .*-j KUBE-SERVICES/.test(l)) ? 'OUTPUT jumps to KUBE-SERVICES' : 'no OUTPUT jump to KUBE-SERVICES'
  const chains = new Set(lines.filter((l) => l.includes(`${ip}/32`)).map((l) => /-j (KUBE-SVC-\w+)/.exec(l)?.[1]).filter((c): c is string => !!c))
  const seps = new Set(lines.filter((l) => [...chains].some((c) => l.startsWith(`-A ${c} `))).map((l) => /-j (KUBE-SEP-\w+)/.exec(l)?.[1]).filter((c): c is string => !!c))
  const dnat = lines.filter((l) => [...seps].some((c) => l.startsWith(`-A ${c} `)) && l.includes('DNAT')).map((l) => /--to-destination (\S+)/.exec(l)?.[1] ?? l)
  return `${output}; ${lines.filter((l) => l.includes(`${ip}/32`)).length} rules for ${ip}; chains ${[...chains].join(',') || 'none'} -> ${[...seps].join(',') || 'no endpoint chain'} -> DNAT ${dnat.join(',') || 'none'}`
}

/** Whether kube-proxy runs, and its last error lines (klog's E lines) from the log its stdout goes to. */
function kubeProxyState(): string {
  const pid = readdirSync('/proc').find((d) => /^\d+$/.test(d) && readOr(`/proc/${d}/comm`).trim() === 'kube-proxy')
  if (!pid) return 'not running'
  let log = ''
  try {
    log = readFileSync(readlinkSync(`/proc/${pid}/fd/1`), 'utf8')
  } catch (err) {
    return `pid ${pid}, log unreadable: ${(err as Error).message}`
  }
  const errors = log.split('\n').filter((l) => /^E\d{4} /.test(l))
  return `pid ${pid}, ${errors.length} error lines${errors.length ? `, last: ${errors.slice(-3).map((l) => l.slice(0, 300)).join(' | ')}` : ''}`
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return ''
  }
}

/** The released image, as the workflow-changed Service runs it. */
export async function releasedImage(admin: KubeHttp): Promise<string> {
  const service = await admin.get<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }>('/apis/serving.knative.dev/v1/namespaces/kinetic-system/services/workflow-changed')
  return service!.spec.template.spec.containers[0]!.image
}
