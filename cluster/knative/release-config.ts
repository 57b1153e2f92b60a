// Knative's release configuration, read as data from the Go module cache at install time (never
// copied into the repository): the YAML under each module's config/, with `ko://<package>` image
// references replaced by images of ours. The Go module zip drops symlinks, so the parts upstream's
// repositories link in (the networking CRDs and config-network from knative.dev/networking, the
// Image CRD from knative.dev/caching) are read from those modules, at the versions Serving's
// go.mod requires. Everything here is pure except readYamlTree.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseAllDocuments } from 'yaml'

export type KubeDoc = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }

/** One YAML document and the file it came from (for messages). */
export interface ReleaseDoc {
  file: string
  doc: KubeDoc
}

/** Every `.yaml` file under `dir` (recursively, sorted by path, as `kubectl apply -R` reads them). */
export function readYamlTree(dir: string, label: string): ReleaseDoc[] {
  const files: string[] = []
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (name.endsWith('.yaml') || name.endsWith('.yml')) files.push(path)
    }
  }
  walk(dir)
  return files.flatMap((path) => parseYamlDocs(readFileSync(path, 'utf8'), `${label}/${relative(dir, path)}`))
}

/** The Kubernetes objects of one YAML stream; empty documents (comments only) are skipped. */
export function parseYamlDocs(text: string, file: string): ReleaseDoc[] {
  const out: ReleaseDoc[] = []
  for (const d of parseAllDocuments(text)) {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`)
    const doc = d.toJSON() as KubeDoc | null
    if (!doc || typeof doc !== 'object') continue
    if (!doc.apiVersion || !doc.kind || !doc.metadata?.name) throw new Error(`${file}: a document without apiVersion, kind or metadata.name`)
    out.push({ file, doc })
  }
  return out
}

/**
 * Replaces every `ko://<package>` string in the documents (container images, env values such as
 * the receive adapter's image, the queue-proxy image in config-deployment) by `images[<package>]`.
 * Returns the rewritten documents and the `ko://` references left without an image of ours.
 */
export function substituteImages(docs: ReleaseDoc[], images: Record<string, string>): { docs: ReleaseDoc[]; unresolved: string[] } {
  const unresolved = new Set<string>()
  const swap = (value: unknown): unknown => {
    if (typeof value === 'string') {
      if (!value.startsWith('ko://')) return value
      const image = images[value.slice('ko://'.length)]
      if (image === undefined) unresolved.add(value)
      return image ?? value
    }
    if (Array.isArray(value)) return value.map(swap)
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, swap(v)]))
    return value
  }
  return { docs: docs.map((d) => ({ file: d.file, doc: swap(d.doc) as KubeDoc })), unresolved: [...unresolved].sort() }
}

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet'])

/**
 * Lowers every workload container's CPU request to `cpu` (limits untouched). The release asks for
 * about 2 cores of requests in all, which a 2-core node cannot schedule beside its own pods.
 */
export function capCpuRequests(docs: ReleaseDoc[], cpu: string): ReleaseDoc[] {
  return docs.map(({ file, doc }) => {
    if (!WORKLOAD_KINDS.has(doc.kind)) return { file, doc }
    const copy = structuredClone(doc) as KubeDoc & { spec?: { template?: { spec?: { containers?: Array<{ resources?: { requests?: Record<string, string> } }> } } } }
    for (const c of copy.spec?.template?.spec?.containers ?? []) {
      c.resources = { ...c.resources, requests: { ...c.resources?.requests, cpu } }
    }
    return { file, doc: copy }
  })
}

/** Sets keys of a ConfigMap of the release (e.g. config-network's ingress-class). Throws if it is absent. */
export function setConfigMapData(docs: ReleaseDoc[], namespace: string, name: string, data: Record<string, string>): ReleaseDoc[] {
  let found = false
  const out = docs.map(({ file, doc }) => {
    if (doc.kind !== 'ConfigMap' || doc.metadata.name !== name || doc.metadata.namespace !== namespace) return { file, doc }
    found = true
    const existing = (doc as { data?: Record<string, string> }).data ?? {}
    // The release's `_example` key is documentation only; keep it, add ours.
    return { file, doc: { ...doc, data: { ...existing, ...data } } as KubeDoc }
  })
  if (!found) throw new Error(`ConfigMap ${namespace}/${name} is not in the release configuration`)
  return out
}

/** CustomResourceDefinitions and Namespaces first (they must exist before the rest is admitted). */
export function splitFoundation(docs: ReleaseDoc[]): { foundation: ReleaseDoc[]; rest: ReleaseDoc[] } {
  const first = (d: ReleaseDoc) => d.doc.kind === 'CustomResourceDefinition' || d.doc.kind === 'Namespace'
  return { foundation: docs.filter(first), rest: docs.filter((d) => !first(d)) }
}

/** The Deployments of the release with their replicas (0 means a controller scales it on demand). */
export function deploymentsOf(docs: ReleaseDoc[]): Array<{ namespace: string; name: string; replicas: number }> {
  return docs
    .filter((d) => d.doc.kind === 'Deployment')
    .map((d) => ({ namespace: d.doc.metadata.namespace ?? 'default', name: d.doc.metadata.name, replicas: (d.doc as { spec?: { replicas?: number } }).spec?.replicas ?? 1 }))
}
