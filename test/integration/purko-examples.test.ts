import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, KubernetesObjectApi, loadAllYaml, loadYaml, type KubernetesObject, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { referenceDir } from '../support/reference.js'

/** Every manifest of purko's examples, of every kind, applies unchanged to Kinetic's CRDs. */

let api: ApiServer
let objects: KubernetesObjectApi

function walk(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]))
}

const root = join(referenceDir(), 'purko', 'examples')
const documents = walk(root)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((file) => (loadAllYaml(readFileSync(file, 'utf8')) as KubernetesObject[]).filter(Boolean).map((doc) => ({ file: file.slice(root.length + 1), doc })))

beforeAll(async () => {
  api = await startApiServer()
  const kc = api.kubeConfigObject()
  objects = KubernetesObjectApi.makeApiClient(kc)
  const ext = kc.makeApiClient(ApiextensionsV1Api)
  const dir = join(import.meta.dirname, '../../crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
  }
})

afterAll(async () => {
  await api.close()
})

describe("purko's examples", () => {
  it('include Agents, Workflows, LLMProviders, an MCPServer, a MemoryProvider and an AgentAutonomyPolicy', () => {
    const kinds = new Set(documents.map((d) => d.doc.kind))
    for (const kind of ['Agent', 'Workflow', 'LLMProvider', 'MCPServer', 'MemoryProvider', 'AgentAutonomyPolicy']) expect(kinds).toContain(kind)
  })

  it.each(documents.map((d) => [`${d.file}: ${d.doc.kind} ${d.doc.metadata?.name}`, d.doc] as const))('%s applies unchanged', async (_, doc) => {
    const created = await objects.create(doc)
    expect(created.metadata?.uid).toBeTruthy()
  })
})
