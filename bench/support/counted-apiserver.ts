// The embedded API server with a count, by purpose, of the requests it handled while counting
// is on; and the install every bench that drives the functions in-process needs (crds/).
import { PINGSOURCE_CRD } from '../../local/knative/pingsource-crd.js'
import { readdirSync, readFileSync } from 'node:fs'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { parseAllDocuments } from 'yaml'
import { startApiServer, type ApiServer, type KubeObject } from '../../local/apiserver/index.js'
import { apiPurpose } from '../idle-cost/api-purpose.js'

export interface CountedApiServer {
  server: ApiServer
  /** Requests by purpose (`apiPurpose`), while `counting.on`. */
  counts: Map<string, number>
  counting: { on: boolean }
  /** A request as the cluster's administrator (not counted unless counting is on). */
  call(method: string, path: string, body?: unknown): Promise<KubeObject>
  /** Stops counting once the last handled request's log line has been read. */
  settle(): Promise<void>
}

export async function startCountedApiServer(): Promise<CountedApiServer> {
  const counts = new Map<string, number>()
  const counting = { on: false }
  // The server logs each handled request at debug level: counting from there counts what
  // actually reached it, whoever sent it.
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!counting.on || !line.includes('"Handled request"')) continue
        const { method, url } = JSON.parse(line) as { method: string; url: string }
        const purpose = apiPurpose(method, url)
        counts.set(purpose, (counts.get(purpose) ?? 0) + 1)
      }
      done()
    },
  })
  const server = await startApiServer({ log: pino({ level: 'debug' }, sink) })
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headers: { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' },
    })
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${(await res.text()).slice(0, 300)}`)
    return (await res.json()) as KubeObject
  }
  const settle = async () => {
    await new Promise((r) => setImmediate(r))
    counting.on = false
  }
  return { server, counts, counting, call, settle }
}

const root = new URL('../../', import.meta.url)

/** Every object of the YAML files in a folder of the repository, e.g. `crds/`. */
export function yamlObjects(dir: string): KubeObject[] {
  return readdirSync(new URL(dir, root)).filter((f) => f.endsWith('.yaml')).flatMap((f) =>
    parseAllDocuments(readFileSync(new URL(`${dir}${f}`, root), 'utf8')).map((d) => d.toJSON() as KubeObject | null).filter((o): o is KubeObject => o !== null))
}

/** Installs crds/ and waits until the purko.io group is served. */
export async function installCrds(api: CountedApiServer): Promise<void> {
  for (const crd of yamlObjects('crds/').filter((o) => o.kind === 'CustomResourceDefinition')) {
    await api.call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
  }
  // PingSources as the local plane serves them without Knative: the ticks' alarms are PingSources.
  await api.call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', PINGSOURCE_CRD)
  while ((await fetch(`${api.server.url}/apis/purko.io/v1alpha1`)).status !== 200) await new Promise((r) => setTimeout(r, 20))
  while ((await fetch(`${api.server.url}/apis/sources.knative.dev/v1`)).status !== 200) await new Promise((r) => setTimeout(r, 20))
}
