import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { allCrds } from '../../shared/crd/definitions.js'
import { crdFileName, renderCrdYaml, renderKustomization } from '../../shared/crd/render.js'

const crdDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'crds')
const hint = 'crds/ is out of date with shared/schemas: run `npm run generate:crds` and commit the result'

describe('crds/ generated from the zod schemas', () => {
  const crds = allCrds()

  it.each(crds.map((c) => [crdFileName(c), c] as const))('%s matches a fresh generation byte for byte', (file, crd) => {
    const onDisk = readFileSync(join(crdDir, file), 'utf8')
    expect(onDisk === renderCrdYaml(crd), hint).toBe(true)
  })

  it('kustomization.yaml lists exactly the generated CRDs', () => {
    const onDisk = readFileSync(join(crdDir, 'kustomization.yaml'), 'utf8')
    expect(onDisk === renderKustomization(crds), hint).toBe(true)
  })

  it('crds/ holds no stale CRD files for kinds that no longer exist', () => {
    const expected = new Set([...crds.map(crdFileName), 'kustomization.yaml'])
    const stale = readdirSync(crdDir).filter((f) => f.endsWith('.yaml') && !expected.has(f))
    expect(stale, hint).toEqual([])
  })

  it('generates one CRD per purko.io kind with the names purko uses, then the recipe kinds with the contract\'s names', () => {
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
})
