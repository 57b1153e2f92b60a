import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { describe, expect, it } from 'vitest'
import { renderKustomization as renderKustomizationTree } from '../../scripts/kustomize.mjs'
import { allCrds } from '../../shared/crd/definitions.js'
import { CRDS_KUSTOMIZATION_FILE, crdFileName, renderCrdYaml, renderKustomization } from '../../shared/crd/render.js'

const crdDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'crds')
const hint = 'crds/ is out of date with shared/schemas: run `npm run generate:crds` and commit the result'

describe('crds/ generated from the zod schemas', () => {
  const crds = allCrds()

  it.each(crds.map((c) => [crdFileName(c), c] as const))('%s matches a fresh generation byte for byte', (file, crd) => {
    const onDisk = readFileSync(join(crdDir, file), 'utf8')
    expect(onDisk === renderCrdYaml(crd), hint).toBe(true)
  })

  it('the kustomization (crds/Kustomization) lists exactly the generated CRDs', () => {
    const onDisk = readFileSync(join(crdDir, CRDS_KUSTOMIZATION_FILE), 'utf8')
    expect(onDisk === renderKustomization(crds), hint).toBe(true)
  })

  it('crds/ holds no stale CRD files for kinds that no longer exist', () => {
    const expected = new Set([...crds.map(crdFileName), CRDS_KUSTOMIZATION_FILE])
    const stale = readdirSync(crdDir).filter((f) => !expected.has(f))
    expect(stale, hint).toEqual([])
  })

  it('generates one CRD per purko.io kind with the names purko uses, then the recipe kinds with the spec\'s names', () => {
    expect(crds.map((c) => [c.metadata.name, c.spec.names.shortNames])).toEqual([
      ['agents.purko.io', ['ag']],
      ['workflows.purko.io', ['wf']],
      ['mcpservers.purko.io', ['mcp']],
      ['llmproviders.purko.io', ['llm']],
      ['agentautonomypolicies.purko.io', ['aap']],
      ['memoryproviders.purko.io', ['mem']],
      ['workflowrecipes.purko.io', ['wr', 'recipe']],
      ['workflowrecipepolicies.purko.io', ['wrp', 'recipepolicy']],
    ])
    expect(crds.map((c) => c.spec.scope).filter((s) => s === 'Cluster')).toHaveLength(1)
    expect(crds.find((c) => c.spec.names.kind === 'WorkflowRecipePolicy')?.spec.scope).toBe('Cluster')
  })

  it('`kubectl apply -f crds/` reads only CustomResourceDefinitions: every file it reads (.json, .yaml, .yml) holds CRDs and nothing else', () => {
    const read = readdirSync(crdDir).filter((f) => /\.(json|ya?ml)$/.test(f)).sort()
    const kinds = read.map((f) => [f, [...new Set(parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')).map((d) => (d.toJS() as { kind?: string } | null)?.kind))]])
    expect(kinds).toEqual(crds.map(crdFileName).sort().map((f) => [f, ['CustomResourceDefinition']]))
  })

  it('`kubectl apply -k crds/` (and knative/\'s `../crds`) renders exactly the generated CRDs', () => {
    const rendered = renderKustomizationTree(crdDir) as Array<{ file: string; object: { kind: string; metadata: { name: string } } }>
    expect(rendered.map((r) => [r.file, r.object.kind, r.object.metadata.name])).toEqual(crds.map((c) => [crdFileName(c), 'CustomResourceDefinition', c.metadata.name]))
  })
})
