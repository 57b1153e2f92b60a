import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parse } from 'yaml'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { parseDocuments } from '../knative/manifests.js'

/** One object of a rendered kustomization, with the file it came from (relative to the root folder). */
export interface RenderedObject {
  file: string
  object: KubeObject
}

interface ImageRule { name: string; newName?: string; newTag?: string; digest?: string }
interface Replacement {
  source: { kind: string; name: string; fieldPath: string }
  targets: Array<{ select: { kind: string; name: string }; fieldPaths: string[] }>
}
interface Kustomization { resources?: string[]; images?: ImageRule[]; replacements?: Replacement[] }

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'images', 'replacements'])

/**
 * The objects `kubectl apply -k <dir>` sends, for the kustomize features Kinetic's install tree
 * uses: `resources` (files, and folders with their own kustomization.yaml), then `images`, then
 * `replacements`, in that order. Any other kustomization field throws, so a feature this does not
 * render is never skipped silently.
 */
export function renderKustomization(dir: string, root: string = dir): RenderedObject[] {
  const file = join(dir, 'kustomization.yaml')
  if (!existsSync(file)) throw new Error(`${relative(root, dir) || '.'} has no kustomization.yaml`)
  const k = parse(readFileSync(file, 'utf8')) as Kustomization & Record<string, unknown>
  const unknown = Object.keys(k).filter((f) => !KNOWN_FIELDS.has(f))
  if (unknown.length > 0) throw new Error(`${relative(root, file)}: kustomization fields not rendered here: ${unknown.join(', ')}`)
  const out: RenderedObject[] = []
  for (const entry of k.resources ?? []) {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) out.push(...renderKustomization(path, root))
    else out.push(...parseDocuments(readFileSync(path, 'utf8'), entry).map((object) => ({ file: relative(root, path), object: object as KubeObject })))
  }
  for (const { object } of out) rewriteImages(object, k.images ?? [])
  for (const r of k.replacements ?? []) replace(out.map((o) => o.object), r)
  return out
}

function rewriteImages(value: unknown, rules: ImageRule[]): void {
  if (rules.length === 0 || value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    for (const item of value) rewriteImages(item, rules)
    return
  }
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    if ((key === 'containers' || key === 'initContainers') && Array.isArray(child)) {
      for (const c of child as Array<Record<string, unknown>>) {
        if (typeof c?.image === 'string') c.image = rewriteImage(c.image, rules)
      }
    }
    rewriteImages(child, rules)
  }
}

/** `name[:tag][@digest]` with a registry port kept in the name. */
function rewriteImage(image: string, rules: ImageRule[]): string {
  const at = image.indexOf('@')
  const beforeDigest = at >= 0 ? image.slice(0, at) : image
  const colon = beforeDigest.lastIndexOf(':')
  const hasTag = colon > beforeDigest.lastIndexOf('/')
  const name = hasTag ? beforeDigest.slice(0, colon) : beforeDigest
  const rule = rules.find((r) => r.name === name)
  if (!rule) return image
  const newName = rule.newName ?? name
  if (rule.digest) return `${newName}@${rule.digest}`
  if (rule.newTag) return `${newName}:${rule.newTag}`
  return newName + image.slice(name.length)
}

function replace(objects: KubeObject[], r: Replacement): void {
  const pick = (sel: { kind: string; name: string }) => objects.filter((o) => o.kind === sel.kind && o.metadata?.name === sel.name)
  const [source, ...more] = pick(r.source)
  if (!source || more.length > 0) throw new Error(`replacement source ${r.source.kind}/${r.source.name} must match exactly one object`)
  const value = getPath(source, r.source.fieldPath)
  if (value === undefined) throw new Error(`replacement source ${r.source.kind}/${r.source.name} has no ${r.source.fieldPath}`)
  for (const t of r.targets) {
    const targets = pick(t.select)
    if (targets.length === 0) throw new Error(`replacement target ${t.select.kind}/${t.select.name} matches no object`)
    for (const target of targets) for (const path of t.fieldPaths) setPath(target, path, value, `${t.select.kind}/${t.select.name}`)
  }
}

/** `a.b.0.c.[name=X].value`: fields, list indexes and `[key=value]` list selectors. */
function segments(path: string): string[] {
  return path.split(/\.(?![^[]*\])/)
}

function step(node: unknown, seg: string): unknown {
  if (node === null || typeof node !== 'object') return undefined
  const selector = /^\[([^=\]]+)=([^\]]*)\]$/.exec(seg)
  if (selector) {
    if (!Array.isArray(node)) return undefined
    return node.find((item) => (item as Record<string, unknown> | null)?.[selector[1]!] === selector[2])
  }
  if (Array.isArray(node)) return /^\d+$/.test(seg) ? node[Number(seg)] : undefined
  return (node as Record<string, unknown>)[seg]
}

function getPath(obj: unknown, path: string): unknown {
  return segments(path).reduce<unknown>((node, seg) => step(node, seg), obj)
}

function setPath(obj: unknown, path: string, value: unknown, what: string): void {
  const segs = segments(path)
  const last = segs.pop()!
  const parent = segs.reduce<unknown>((node, seg) => step(node, seg), obj)
  if (parent === null || typeof parent !== 'object' || Array.isArray(parent) || !(last in parent)) {
    throw new Error(`replacement target ${what} has no ${path}`)
  }
  ;(parent as Record<string, unknown>)[last] = value
}
