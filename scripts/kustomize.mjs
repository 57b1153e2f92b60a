// The objects `kubectl kustomize <dir>` renders, for the kustomize features Kinetic's install tree
// uses. Shared by the release script (release/install.yaml) and the cluster tier's tests, so what
// the tests apply to a real API server is exactly what a release ships.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parse, parseAllDocuments } from 'yaml'

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'images', 'replacements'])

/** Parses a multi-document YAML file; throws on any YAML error so a broken file fails loudly. */
export function parseDocuments(text, file) {
  return parseAllDocuments(text).flatMap((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`)
    const value = d.toJS()
    return value === null || value === undefined ? [] : [value]
  })
}

/**
 * The objects `kubectl apply -k <dir>` sends, for the kustomize features Kinetic's install tree
 * uses: `resources` (files, and folders with their own kustomization: `kustomization.yaml`,
 * `.yml` or `Kustomization`), then `images`, then
 * `replacements`, in that order. Any other kustomization field throws, so a feature this does not
 * render is never skipped silently. `options.root` names files relative to it (default `dir`);
 * `options.images` replaces the top kustomization's `images:` entries of the same name, as
 * `kustomize edit set image` would before rendering, without touching the file.
 */
export function renderKustomization(dir, options = {}) {
  return render(dir, options.root ?? dir, options.images ?? [])
}

/** The file names kustomize recognizes as a folder's kustomization, in its order. */
const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization']

function render(dir, root, overrides) {
  const found = KUSTOMIZATION_FILES.map((name) => join(dir, name)).filter((f) => existsSync(f))
  if (found.length === 0) throw new Error(`${relative(root, dir) || '.'} has no kustomization (${KUSTOMIZATION_FILES.join(', ')})`)
  // kustomize refuses a folder with more than one, and so does this.
  if (found.length > 1) throw new Error(`${relative(root, dir) || '.'} has more than one kustomization: ${found.map((f) => relative(dir, f)).join(', ')}`)
  const file = found[0]
  const k = parse(readFileSync(file, 'utf8'))
  const unknown = Object.keys(k).filter((f) => !KNOWN_FIELDS.has(f))
  if (unknown.length > 0) throw new Error(`${relative(root, file)}: kustomization fields not rendered here: ${unknown.join(', ')}`)
  const out = []
  for (const entry of k.resources ?? []) {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) out.push(...render(path, root, []))
    else out.push(...parseDocuments(readFileSync(path, 'utf8'), entry).map((object) => ({ file: relative(root, path), object })))
  }
  const rules = [...(k.images ?? []).filter((r) => !overrides.some((o) => o.name === r.name)), ...overrides]
  for (const { object } of out) rewriteImages(object, rules)
  for (const r of k.replacements ?? []) replace(out.map((o) => o.object), r)
  return out
}

function rewriteImages(value, rules) {
  if (rules.length === 0 || value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    for (const item of value) rewriteImages(item, rules)
    return
  }
  for (const [key, child] of Object.entries(value)) {
    if ((key === 'containers' || key === 'initContainers') && Array.isArray(child)) {
      for (const c of child) {
        if (typeof c?.image === 'string') c.image = rewriteImage(c.image, rules)
      }
    }
    rewriteImages(child, rules)
  }
}

/** `name[:tag][@digest]` with a registry port kept in the name. */
function rewriteImage(image, rules) {
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

function replace(objects, r) {
  const pick = (sel) => objects.filter((o) => o.kind === sel.kind && o.metadata?.name === sel.name)
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
function segments(path) {
  return path.split(/\.(?![^[]*\])/)
}

function step(node, seg) {
  if (node === null || typeof node !== 'object') return undefined
  const selector = /^\[([^=\]]+)=([^\]]*)\]$/.exec(seg)
  if (selector) {
    if (!Array.isArray(node)) return undefined
    return node.find((item) => item?.[selector[1]] === selector[2])
  }
  if (Array.isArray(node)) return /^\d+$/.test(seg) ? node[Number(seg)] : undefined
  return node[seg]
}

function getPath(obj, path) {
  return segments(path).reduce((node, seg) => step(node, seg), obj)
}

function setPath(obj, path, value, what) {
  const segs = segments(path)
  const last = segs.pop()
  const parent = segs.reduce((node, seg) => step(node, seg), obj)
  if (parent === null || typeof parent !== 'object' || Array.isArray(parent) || !(last in parent)) {
    throw new Error(`replacement target ${what} has no ${path}`)
  }
  parent[last] = value
}
