// A test's stand-in served in the tier's cluster, and HTTP to a Service's cluster IP from the test
// process: the tier's node runs on this machine, so kube-proxy's rules route a ClusterIP from here
// as from a pod (no DNS for cluster names here).
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { basename } from 'node:path'
import { deploymentsNotAvailable, waitFor } from '../../../cluster/knative/install.js'
import type { KubeHttp } from '../../../local/knative/kube-http.js'

/** GET http://<ip>:<port><path>, parsed as JSON; rejects on a status other than 200. */
export function getJson(ip: string, path: string, port = 80): Promise<unknown> {
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

/**
 * Runs a test's stand-in (a model API, an event recorder) as the tier runs any workload: the script
 * in a ConfigMap, a Deployment of the released image running it as a non-root user on port 8080,
 * and a Service on port 80. Resolves with the Service's cluster IP once the Deployment is
 * Available (a pod that cannot start fails the wait with the kubelet's reason).
 */
export async function serveNodeScript(admin: KubeHttp, s: NodeScriptService): Promise<string> {
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
            securityContext: { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          }],
          volumes: [{ name: 'script', configMap: { name: s.name } }],
        },
      },
    },
  }, s.namespace)
  await admin.apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: s.name, namespace: s.namespace }, spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] } }, s.namespace)
  await waitFor(`${s.namespace}/${s.name} Available`, 180_000, () => deploymentsNotAvailable(admin, [{ namespace: s.namespace, name: s.name }]))
  const ip = (await admin.get<{ spec: { clusterIP: string } }>(`/api/v1/namespaces/${s.namespace}/services/${s.name}`))!.spec.clusterIP
  // Available means the kubelet's probe reached the pod; the cluster IP answers once the
  // EndpointSlice lists the pod and kube-proxy has written its rules, on a loaded machine later.
  const deadline = Date.now() + 180_000
  for (;;) {
    if ((await getJson(ip, s.readyPath).catch(() => undefined)) !== undefined) return ip
    if (Date.now() > deadline) throw new Error(`${s.namespace}/${s.name}: its Service ${ip} did not answer within 180 s (${await whyNoAnswer(admin, s, ip)})`)
    await new Promise((r) => setTimeout(r, 1000))
  }
}

/** What stands between the Service's cluster IP and its ready pod: the EndpointSlice, the pod itself, kube-proxy's rules. */
async function whyNoAnswer(admin: KubeHttp, s: NodeScriptService, ip: string): Promise<string> {
  const slices = await admin.get<{ items: Array<{ endpoints?: Array<{ addresses: string[]; conditions?: { ready?: boolean } }> }> }>(
    `/apis/discovery.k8s.io/v1/namespaces/${s.namespace}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${s.name}`)}`)
  const endpoints = (slices?.items ?? []).flatMap((i) => i.endpoints ?? []).map((e) => `${e.addresses.join('/')}${e.conditions?.ready ? ' ready' : ' not ready'}`)
  const pods = await admin.get<{ items: Array<{ status?: { podIP?: string } }> }>(`/api/v1/namespaces/${s.namespace}/pods?labelSelector=${encodeURIComponent(`app=${s.name}`)}`)
  const podIp = pods?.items[0]?.status?.podIP
  const direct = podIp ? await getJson(podIp, s.readyPath, 8080).then(() => 'answers', (err: Error) => err.message) : 'no pod IP'
  const nat = spawnSync('iptables-save', ['-t', 'nat'], { encoding: 'utf8' })
  const rules = nat.status === 0 ? nat.stdout.split('\n').filter((l) => l.includes(`${ip}/32`)).length : `iptables-save failed: ${nat.stderr.trim()}`
  return `endpoints: ${endpoints.join(', ') || 'none'}; pod ${podIp ?? '?'}:8080 ${direct}; kube-proxy rules for ${ip}: ${rules}`
}

/** The released image, as the workflow-changed Service runs it. */
export async function releasedImage(admin: KubeHttp): Promise<string> {
  const service = await admin.get<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }>('/apis/serving.knative.dev/v1/namespaces/kinetic-system/services/workflow-changed')
  return service!.spec.template.spec.containers[0]!.image
}
