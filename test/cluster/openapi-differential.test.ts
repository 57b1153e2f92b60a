// What `kubectl explain` shows for every Kinetic kind, against the real kube-apiserver and the
// embedded one: the OpenAPI v3 and v2 schemas both publish for each CRD (compared whole), and
// kubectl's own output of both OpenAPI versions. The one deliberate difference: the embedded
// server does not repeat Kubernetes' documentation of ObjectMeta's fields.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { eventually } from '../support/eventually.js'
import { describeKubectl, kubectlVersion, useKubectlSides } from './kubectl-sides.js'

const ROOT = join(import.meta.dirname, '../..')
const CRD_FILES = readdirSync(join(ROOT, 'crds')).filter((f) => f.endsWith('.purko.io.yaml')).map((f) => join(ROOT, 'crds', f))
const ODDITIES = join(import.meta.dirname, 'fixtures', 'oddities-crd.yaml')

const KINDS = ['Agent', 'Workflow', 'LLMProvider', 'MCPServer', 'MemoryProvider', 'AgentAutonomyPolicy', 'WorkflowRecipe', 'WorkflowRecipePolicy']
const RESOURCES = ['agents', 'workflows', 'llmproviders', 'mcpservers', 'memoryproviders', 'agentautonomypolicies', 'workflowrecipes', 'workflowrecipepolicies']
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.'

type Doc = Record<string, any>

describeKubectl(`OpenAPI and kubectl explain (kubectl ${kubectlVersion}): embedded vs kube-apiserver`, () => {
  const sides = useKubectlSides()
  const raw = async (path: string): Promise<{ real: Doc; local: Doc }> => {
    const { real, local } = await sides.both(['get', '--raw', path])
    expect(real.code, real.stderr).toBe(0)
    expect(local.code, local.stderr).toBe(0)
    return { real: JSON.parse(real.stdout) as Doc, local: JSON.parse(local.stdout) as Doc }
  }

  beforeAll(async () => {
    for (const file of [...CRD_FILES, ODDITIES]) {
      const { real, local } = await sides.both(['apply', '-f', file])
      if (real.code !== 0 || local.code !== 0) throw new Error(`kubectl apply -f ${file}: real ${real.stderr} / embedded ${local.stderr}`)
    }
    await sides.both(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=60s'])
    // kube-apiserver publishes a new CRD's OpenAPI a moment after it is established.
    await eventually('the real server to publish the CRDs\' OpenAPI', async () => {
      const { real } = await raw('/openapi/v3')
      if (!real.paths['apis/purko.io/v1alpha1'] || !real.paths['apis/edge.kinetic.dev/v1']) return false
      const v2 = JSON.parse((await sides.real.run(['get', '--raw', '/openapi/v2'])).stdout) as Doc
      return [...KINDS.map((k) => `io.purko.v1alpha1.${k}`), 'dev.kinetic.edge.v1.Oddity'].every((m) => m in v2.definitions)
    }, 60_000)
  }, 180_000)

  it('publishes the same OpenAPI v3 schema for every Kinetic kind and its list, descriptions included', async () => {
    const { real, local } = await raw('/openapi/v3/apis/purko.io/v1alpha1')
    expect(local.info).toEqual(real.info)
    for (const kind of KINDS) {
      for (const model of [`io.purko.v1alpha1.${kind}`, `io.purko.v1alpha1.${kind}List`]) {
        expect(local.components.schemas[model], model).toEqual(real.components.schemas[model])
      }
    }
  })

  it('publishes the same OpenAPI v2 definitions for every Kinetic kind and its list', async () => {
    const { real, local } = await raw('/openapi/v2')
    for (const kind of KINDS) {
      for (const model of [`io.purko.v1alpha1.${kind}`, `io.purko.v1alpha1.${kind}List`]) {
        expect(local.definitions[model], model).toEqual(real.definitions[model])
      }
    }
  })

  it('publishes the same schemas for nullable, int-or-string, embedded, open and junctor fields, in both versions', async () => {
    const v3 = await raw('/openapi/v3/apis/edge.kinetic.dev/v1')
    const v2 = await raw('/openapi/v2')
    for (const model of ['dev.kinetic.edge.v1.Oddity', 'dev.kinetic.edge.v1.OddityList']) {
      expect(v3.local.components.schemas[model], `v3 ${model}`).toEqual(v3.real.components.schemas[model])
      expect(v2.local.definitions[model], `v2 ${model}`).toEqual(v2.real.definitions[model])
    }
  })

  it('publishes the meta types with the same fields, types and extensions, without Kubernetes\' field documentation', async () => {
    const { real, local } = await raw('/openapi/v3/apis/purko.io/v1alpha1')
    const undocumented = (s: unknown): unknown => {
      if (Array.isArray(s)) return s.map(undocumented)
      if (!s || typeof s !== 'object') return s
      return Object.fromEntries(Object.entries(s).filter(([k]) => k !== 'description').map(([k, v]) => [k, undocumented(v)]))
    }
    const metaModels = Object.keys(real.components.schemas).filter((m) => m.startsWith(META)).sort()
    expect(Object.keys(local.components.schemas).filter((m) => m.startsWith(META)).sort()).toEqual(metaModels)
    for (const model of metaModels) {
      const [r, l] = [real.components.schemas[model], local.components.schemas[model]]
      // DeleteOptions names every group-version a server serves; the two serve different sets.
      if (model.endsWith('.DeleteOptions')) for (const s of [r, l]) delete s['x-kubernetes-group-version-kind']
      expect(undocumented(l), model).toEqual(undocumented(r))
    }
    expect(real.components.schemas[`${META}ObjectMeta`].properties.name.description).toMatch(/^Name must be unique within a namespace/)
    expect(local.components.schemas[`${META}ObjectMeta`].properties.name.description).toBeUndefined()
  })

  const explained = [
    ...RESOURCES.flatMap((r) => [[r], [`${r}.spec`], [`${r}.status`], [r, '--recursive']]),
    ['agent.spec.model'], ['wr.spec'], ['wr.spec.workloads.replicas'], ['workflow.spec.steps.retryPolicy'], ['mcp.spec.auth'],
    ['oddity.spec'], ['oddity.spec.maybe'], ['oddity.spec.port'], ['oddity.spec.embedded'], ['oddity.spec.embeddedStrict'], ['oddity.spec.free'], ['oddity.spec.choice'], ['oddity', '--recursive'],
  ]
  it.each(explained.flatMap((args) => ['plaintext', 'plaintext-openapiv2'].map((o) => [...args, `--output=${o}`].join(' '))))(
    'kubectl explain %s prints the same',
    async (line: string) => {
      const { real, local } = await sides.both(['explain', ...line.split(' ')])
      expect(real.code, real.stderr).toBe(0)
      expect({ code: local.code, stdout: local.stdout, stderr: local.stderr }).toEqual({ code: real.code, stdout: real.stdout, stderr: real.stderr })
    },
    30_000,
  )

  it('kubectl explain agent.metadata lists the same fields and types; the field documentation is Kubernetes\' own and only the real server has it', async () => {
    const { real, local } = await sides.both(['explain', 'agent.metadata'])
    const fields = (text: string) => text.split('\n').filter((l) => /^ {2}\S+\t<[^>]+>/.test(l))
    expect(fields(local.stdout)).toEqual(fields(real.stdout))
    expect(fields(local.stdout)).toContain('  ownerReferences\t<[]OwnerReference>')
    expect(real.stdout).toContain('Name must be unique within a namespace')
    expect(local.stdout).not.toContain('Name must be unique within a namespace')
    expect(local.stdout).toContain("Standard object's metadata.")
  })
})
