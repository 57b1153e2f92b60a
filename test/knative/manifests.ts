import { readFileSync, readdirSync } from 'node:fs'
import { basename, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'

/** The repository root, from this file's location. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
/** The install tree under test. */
export const KNATIVE_DIR = join(ROOT, 'knative')

/** One parsed YAML document of knative/, with the file it came from. */
export interface Manifest {
  /** Path relative to knative/, e.g. `triggers/workflow-changed.yaml`. */
  file: string
  apiVersion: string
  kind: string
  name: string
  namespace: string | undefined
  doc: Record<string, any>
}

/** Every `.yaml` file under `dir`, relative to it, sorted. */
export function yamlFiles(dir: string = KNATIVE_DIR): string[] {
  const out: string[] = []
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const full = join(current, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.name.endsWith('.yaml') || entry.name.endsWith('.yml')) out.push(relative(dir, full))
    }
  }
  walk(dir)
  return out.sort()
}

/** Parses a multi-document YAML file; throws on any YAML error so a broken file fails loudly. */
export function parseDocuments(text: string, file: string): Record<string, any>[] {
  return parseAllDocuments(text).flatMap((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`)
    const value = d.toJS() as unknown
    return value === null || value === undefined ? [] : [value as Record<string, any>]
  })
}

/** Every Kubernetes object in knative/ and its folders (their kustomizations excluded). */
export function loadManifests(dir: string = KNATIVE_DIR): Manifest[] {
  return yamlFiles(dir)
    .filter((file) => basename(file) !== 'kustomization.yaml')
    .flatMap((file) => parseDocuments(readFileSync(join(dir, file), 'utf8'), file).map((doc) => ({
      file,
      apiVersion: String(doc.apiVersion),
      kind: String(doc.kind),
      name: String(doc.metadata?.name),
      namespace: doc.metadata?.namespace as string | undefined,
      doc,
    })))
}

/** The manifests of one kind. */
export const ofKind = (manifests: Manifest[], apiVersion: string, kind: string): Manifest[] =>
  manifests.filter((m) => m.apiVersion === apiVersion && m.kind === kind)

/** Function folders that have an entry point (`functions/<name>/main.ts`). */
export function functionNames(): string[] {
  const dir = join(ROOT, 'functions')
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && readdirSync(join(dir, e.name)).includes('main.ts'))
    .map((e) => e.name)
    .sort()
}
