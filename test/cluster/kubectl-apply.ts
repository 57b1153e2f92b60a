// How the cluster tier judges manifests as kubectl would send them: parsed from files, applied
// with strict field validation (optionally as a server-side dry run), CRDs waited for until
// Established, and every refusal or warning turned into a sentence naming the object.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { warningTexts, type KubeHttp, type KubeObject, type KubeResponse } from '../../local/knative/kube-http.js'
import { parseDocuments } from '../knative/manifests.js'
import type { RenderedObject } from './kustomize.js'

function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((f) => {
    const p = join(dir, f)
    if (statSync(p).isDirectory()) return yamlFilesUnder(p)
    return f.endsWith('.yaml') || f.endsWith('.yml') ? [p] : []
  })
}

/** Every document of the YAML files under `dir`, named relative to `base`. */
export function documents(dir: string, base: string, skip: (file: string) => boolean = () => false): RenderedObject[] {
  return yamlFilesUnder(dir)
    .filter((f) => !skip(f))
    .flatMap((f) => parseDocuments(readFileSync(f, 'utf8'), f).map((object) => ({ file: relative(base, f), object: object as KubeObject })))
}

/** `<file>: <Kind> <namespace>/<name>`, how every problem names its object. */
export const label = ({ file, object }: RenderedObject) =>
  `${file}: ${object.kind} ${object.metadata?.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata?.name}`

/** What was wrong with one answer, in words that name the object: refusal, warnings. */
export function problemsOf(what: string, res: KubeResponse): string[] {
  const out: string[] = []
  if (res.status < 200 || res.status >= 300) {
    const message = (res.body as { message?: unknown } | undefined)?.message ?? res.body
    out.push(`${what}: the API server refused it (${res.status}): ${typeof message === 'string' ? message : JSON.stringify(message)}`)
  }
  for (const w of warningTexts(res.headers.warning)) out.push(`${what}: the API server warned: ${w}`)
  return out
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'

/**
 * One object as `kubectl apply --validate=strict` sends it (with `--dry-run=server` when asked):
 * the object with its last-applied annotation, created when it is new, else merged into the
 * live one; strict field validation either way.
 */
export async function kubectlApply(kube: KubeHttp, obj: KubeObject, opts: { dryRun: boolean }): Promise<KubeResponse | string> {
  const { apiVersion, kind, metadata } = obj
  if (!apiVersion || !kind || !metadata?.name) return 'has no apiVersion, kind or metadata.name'
  const collection = await kube.pathFor(apiVersion, kind, metadata.namespace ?? 'default')
  if (!collection) return `the API server does not serve ${kind} in ${apiVersion}`
  const body = { ...obj, metadata: { ...metadata, annotations: { ...metadata.annotations, [LAST_APPLIED]: `${JSON.stringify(obj)}\n` } } }
  const query = `?fieldManager=kubectl-client-side-apply&fieldValidation=Strict${opts.dryRun ? '&dryRun=All' : ''}`
  const item = `${collection}/${encodeURIComponent(metadata.name)}`
  const live = await kube.send('GET', item)
  if (live.status === 404) return kube.send('POST', collection + query, body)
  return kube.send('PATCH', item + query, body, 'application/merge-patch+json')
}

/** The problems of one `kubectl apply` of `doc`, each naming the object. */
export async function applyProblems(kube: KubeHttp, doc: RenderedObject, opts: { dryRun: boolean }): Promise<string[]> {
  const res = await kubectlApply(kube, doc.object, opts)
  return typeof res === 'string' ? [`${label(doc)}: ${res}`] : problemsOf(label(doc), res)
}

type Condition = { type: string; status: string; reason?: string; message?: string }

/** Creates a CRD (as `kubectl create` does) and waits until it is Established; the problems seen on the way. */
export async function createCrd(kube: KubeHttp, doc: RenderedObject): Promise<string[]> {
  const res = await kube.send('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?fieldValidation=Strict', doc.object)
  const problems = problemsOf(label(doc), res)
  if (problems.length > 0) return problems
  return waitEstablished(kube, doc)
}

/** Waits until the CRD of `doc` is Established (then forgets discovery, so its kind is found); the problems, if it never is. */
export async function waitEstablished(kube: KubeHttp, doc: RenderedObject): Promise<string[]> {
  const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${doc.object.metadata?.name}`
  const deadline = Date.now() + 30_000
  let conditions: Condition[] = []
  while (Date.now() < deadline) {
    conditions = ((await kube.request<{ status?: { conditions?: Condition[] } }>('GET', path)).status?.conditions) ?? []
    if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) {
      kube.forgetDiscovery()
      return []
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  return [`${label(doc)}: not Established after 30 s; conditions: ${conditions.map((c) => `${c.type}=${c.status} (${c.reason ?? ''}: ${c.message ?? ''})`).join('; ') || 'none'}`]
}
