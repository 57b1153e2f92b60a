// Cold start on a real Knative cluster: a request to a Knative Service at zero replicas, timed from
// sending it to its answer (activator, pod scheduling, the image already on the node, queue-proxy,
// the process start, the first answer), for a Kinetic function and for a bare Node.js server from
// the same image, in interleaved rounds in the same run on the same cluster.
// The function is workflow-changed, sent an update of a finished Workflow carrying only its reference (it GETs
// the Workflow, finds nothing to do and answers 202: the cold process makes its first API call).
// Both Services get `autoscaling.knative.dev/window: 6s` so each round's scale to zero takes
// seconds, not a minute (a new revision of workflow-changed; its start is the same).
// Needs Kinetic installed (install.yaml) and the example applied (a Workflow release-notes in ai-agents).
// Run: node --import tsx bench/knative-cold-start.ts --kubeconfig <file> [--rounds 5]
import { request } from 'node:http'
import { parseArgs } from 'node:util'
import { KubeConfig } from '@kubernetes/client-node'
import { waitFor } from '../cluster/knative/install.js'
import { KubeHttp } from '../local/knative/kube-http.js'
import { median } from './stats.js'

const SYSTEM = 'kinetic-system'
const BARE = 'bare-node'
const WINDOW = { 'autoscaling.knative.dev/window': '6s' }

/** A POST through Traefik's cluster-local entry with the route's host name; resolves with status and ms. */
function timedPost(ip: string, host: string, headers: Record<string, string>, body: string): Promise<{ status: number; ms: number }> {
  const t0 = performance.now()
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port: 80, path: '/', method: 'POST', headers: { host, ...headers }, timeout: 120_000 }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { kubeconfig: { type: 'string' }, rounds: { type: 'string', default: '5' } } })
  if (!values.kubeconfig) throw new Error('--kubeconfig <file> is required')
  const kc = new KubeConfig()
  kc.loadFromFile(values.kubeconfig)
  const kube = new KubeHttp(kc)
  const fn = await kube.get<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }>(`/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services/workflow-changed`)
  if (!fn) throw new Error('workflow-changed is not installed: kubectl apply -f install.yaml first')
  const image = fn.spec.template.spec.containers[0]!.image
  await kube.mergePatch(`/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services/workflow-changed`, { spec: { template: { metadata: { annotations: WINDOW } } } })
  // Made afresh each run (a Knative Service cannot be replaced: its creator annotation is immutable).
  await kube.request('DELETE', `/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services/${BARE}`).catch(() => undefined)
  await waitFor(`the previous ${BARE} gone`, 300_000, async () => ((await kube.get(`/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services/${BARE}`)) === null ? undefined : 'still there'))
  await kube.request('POST', `/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services`, {
    apiVersion: 'serving.knative.dev/v1', kind: 'Service',
    metadata: { name: BARE, namespace: SYSTEM, labels: { 'networking.knative.dev/visibility': 'cluster-local' } },
    spec: {
      template: {
        metadata: { annotations: WINDOW },
        spec: {
          containers: [{
            // PID 1 has no default SIGTERM action: without the handler a pod would wait out its grace period.
            image, command: ['node', '-e', 'process.on("SIGTERM", () => process.exit(0)); require("node:http").createServer((q, s) => { q.resume(); q.on("end", () => { s.statusCode = 202; s.end() }) }).listen(Number(process.env.PORT))'],
            securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
          }],
        },
      },
    },
  })
  const ready = async (name: string) => {
    const ksvc = await kube.get<{ metadata: { generation: number }; status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string }> } }>(`/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services/${name}`)
    return ksvc?.status?.observedGeneration === ksvc?.metadata.generation && ksvc?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
  }
  for (const name of [BARE, 'workflow-changed']) await waitFor(`Knative Service ${name} Ready`, 300_000, async () => ((await ready(name)) ? undefined : 'not Ready'))
  const privateIp = (await kube.get<{ spec: { clusterIP: string } }>('/api/v1/namespaces/traefik/services/traefik-private'))!.spec.clusterIP
  const pods = async (service: string) =>
    ((await kube.get<{ items: unknown[] }>(`/api/v1/namespaces/${SYSTEM}/pods?labelSelector=serving.knative.dev%2Fservice%3D${service}`))?.items ?? []).length
  const event = {
    'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': 'cold-start', 'ce-source': 'https://10.0.0.1:443',
    'ce-type': 'dev.knative.apiserver.resource.update', 'ce-kineticsource': 'resources', 'ce-kind': 'Workflow',
  }
  const body = JSON.stringify({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', namespace: 'ai-agents', name: 'release-notes' })
  const times: Record<string, number[]> = { [BARE]: [], 'workflow-changed': [] }
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const service of [BARE, 'workflow-changed']) {
      await waitFor(`${service} at zero replicas`, 300_000, async () => {
        const n = await pods(service)
        return n === 0 ? undefined : `${n} pods`
      })
      const host = `${service}.${SYSTEM}.svc.cluster.local`
      const answer = await timedPost(privateIp, host, service === BARE ? {} : event, service === BARE ? '{}' : body)
      if (answer.status !== 202) throw new Error(`${service} answered ${answer.status} from zero`)
      times[service]!.push(answer.ms)
      process.stderr.write(`round ${round + 1}: ${service} ${answer.ms.toFixed(0)} ms from zero\n`)
    }
  }
  await kube.request('DELETE', `/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services/${BARE}`)
  console.log(`Cold start on real Knative (request to answer at zero replicas, ${values.rounds} rounds, ms): ` +
    Object.entries(times).map(([s, t]) => `${s} median ${median(t).toFixed(0)} (min ${Math.min(...t).toFixed(0)}, max ${Math.max(...t).toFixed(0)})`).join('; '))
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err)
  process.exit(1)
})
