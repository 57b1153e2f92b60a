import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parse, parseAllDocuments } from 'yaml'
import { referenceDir } from '../support/reference.js'

/** A purko.io manifest from purko's examples, with the file it came from. */
export interface PurkoManifest {
  file: string
  kind: string
  name: string
  object: Record<string, unknown>
}

function walk(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? walk(p) : [p]
  })
}

/** Every purko.io/v1alpha1 document in purko's examples (other kinds such as Secrets are skipped). */
export function purkoExamples(): PurkoManifest[] {
  const root = join(referenceDir(), 'purko', 'examples')
  return walk(root)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .flatMap((f) => parseAllDocuments(readFileSync(f, 'utf8')).map((d) => ({ f, o: d.toJS() as Record<string, unknown> | null })))
    .filter(({ o }) => o !== null && o.apiVersion === 'purko.io/v1alpha1')
    .map(({ f, o }) => ({
      file: relative(root, f),
      kind: String(o!.kind),
      name: String((o!.metadata as { name?: string }).name),
      object: o!,
    }))
}

/** purko's own CRD for a kind, from the reference material beside the project. */
export function purkoCrd(kind: string): Record<string, any> {
  const dir = join(referenceDir(), 'purko', 'crds')
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
    const crd = parse(readFileSync(join(dir, f), 'utf8')) as Record<string, any>
    if (crd.kind === 'CustomResourceDefinition' && crd.spec.names.kind === kind) return crd
  }
  throw new Error(`no purko CRD for ${kind}`)
}
