import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { silentLogger, type Logger } from '../shared/log.js'
import { KubeHttpError, type KubeHttp, type KubeObject } from './knative/kube-http.js'

/** The CustomResourceDefinitions of a folder's YAML files (crds/), in file order. */
export function readCrds(dir: string, pick: (file: string) => boolean = () => true): KubeObject[] {
  if (!existsSync(dir)) return []
  const out: KubeObject[] = []
  for (const name of readdirSync(dir).sort()) {
    if ((!name.endsWith('.yaml') && !name.endsWith('.yml')) || !pick(name)) continue
    for (const doc of parseAllDocuments(readFileSync(join(dir, name), 'utf8'))) {
      const v = doc.toJSON() as unknown
      if (v && typeof v === 'object' && !Array.isArray(v) && (v as KubeObject).kind === 'CustomResourceDefinition') out.push(v as KubeObject)
    }
  }
  return out
}

/** Applies `crds` and waits until each is usable (see waitUntilServed). */
export async function installCrds(kube: KubeHttp, crds: KubeObject[], log: Logger = silentLogger, timeoutMs = 60_000): Promise<void> {
  for (const crd of crds) {
    try {
      await kube.apply(crd)
    } catch (err) {
      throw new Error(`The API server refused CustomResourceDefinition ${crd.metadata?.name}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  await waitUntilServed(kube, crds, timeoutMs)
  log.info({ crds: crds.map((d) => d.metadata?.name) }, 'Installed CRDs')
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Waits until every served version of each CRD answers a list. A real API server takes three
 * steps after the create: Established, then discovery lists the resource, then (v1.34) the
 * watch cache initializes, answering 429 "storage is (re)initializing" to lists and watches
 * until it has. A function started before the last step logs that 429 as an outage.
 */
export async function waitUntilServed(kube: KubeHttp, crds: KubeObject[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  const late = (what: string) => new Error(`${what} within ${Math.round(timeoutMs / 1000)} s`)
  for (const crd of crds) {
    const name = String(crd.metadata?.name)
    for (;;) {
      const live = await kube.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`)
      const conditions = ((live?.status ?? {}) as { conditions?: Array<{ type: string; status: string }> }).conditions ?? []
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) break
      if (Date.now() > deadline) throw late(`CustomResourceDefinition ${name} was not Established`)
      await pause(100)
    }
  }
  for (const crd of crds) {
    const spec = crd.spec as { group: string; names: { plural: string }; versions: Array<{ name: string; served?: boolean }> }
    for (const v of spec.versions.filter((x) => x.served !== false)) {
      const path = `/apis/${spec.group}/${v.name}`
      for (;;) {
        const doc = await kube.get<{ resources?: Array<{ name: string }> }>(path)
        if (doc?.resources?.some((r) => r.name === spec.names.plural)) break
        if (Date.now() > deadline) throw late(`${spec.names.plural} of ${spec.group}/${v.name} were not in discovery`)
        await pause(50)
      }
      for (;;) {
        const listed = await kube.get(`${path}/${spec.names.plural}`).then(() => true, (err: unknown) => {
          if (err instanceof KubeHttpError && err.status === 429) return false
          throw err
        })
        if (listed) break
        if (Date.now() > deadline) throw late(`${spec.names.plural} of ${spec.group}/${v.name} could not be listed (429: storage initializing)`)
        await pause(100)
      }
    }
  }
  kube.forgetDiscovery()
}
