// A test's stand-in served in the tier's cluster, and HTTP to a Service's cluster IP from the test
// process: the tier's node runs on this machine, so kube-proxy's rules route a ClusterIP from here
// as from a pod (no DNS for cluster names here).
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { basename } from 'node:path'
import { deploymentsNotAvailable, waitFor } from '../../../cluster/knative/install.js'
import type { KubeHttp } from '../../../local/knative/kube-http.js'
import { eventually } from '../../support/eventually.js'

/** GET http://<ip>:80<path>, parsed as JSON; rejects on a status other than 200. */
export function getJson(ip: string, path: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port: 80, path, timeout: 10_000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { body += c })
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`GET ${path}: ${res.statusCode}`))))
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
  await eventually(`${s.namespace}/${s.name} answering on its Service`, async () => (await getJson(ip, s.readyPath).catch(() => undefined)) !== undefined, 60_000, 1000)
  return ip
}

/** The released image, as the workflow-changed Service runs it. */
export async function releasedImage(admin: KubeHttp): Promise<string> {
  const service = await admin.get<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }>('/apis/serving.knative.dev/v1/namespaces/kinetic-system/services/workflow-changed')
  return service!.spec.template.spec.containers[0]!.image
}
