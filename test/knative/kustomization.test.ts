import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { KNATIVE_DIR, loadManifests, yamlFiles } from './manifests.js'

const kustomization = parse(readFileSync(join(KNATIVE_DIR, 'kustomization.yaml'), 'utf8')) as {
  resources: string[]
  images: Array<{ name: string; newName?: string; newTag?: string; digest?: string }>
  replacements: Array<{ source: { kind: string; name: string; fieldPath: string }; targets: Array<{ select: { kind: string; name: string }; fieldPaths: string[] }> }>
}

describe('kubectl apply -k knative/ installs everything', () => {
  it('lists every manifest file in knative/, each once, so none is left out of the install', () => {
    const files = yamlFiles().filter((f) => f !== 'kustomization.yaml' && !f.startsWith('platform/'))
    const listed = kustomization.resources.filter((r) => r.endsWith('.yaml'))
    expect([...listed].sort()).toEqual(files)
    expect(new Set(kustomization.resources).size).toBe(kustomization.resources.length)
  })

  it('creates and deletes no namespace but its own, and puts objects only there: purko\'s namespaces are platform/\'s business', () => {
    const installed = loadManifests().filter((m) => !m.file.startsWith('platform/'))
    expect(installed.filter((m) => m.kind === 'Namespace').map((m) => m.name)).toEqual(['kinetic-system'])
    expect([...new Set(installed.flatMap((m) => (m.namespace ? [m.namespace] : [])))]).toEqual(['kinetic-system'])
  })

  it('platform/ grants the functions what they need in purko-system, ai-agents and the recipe target namespaces, registers the recipes MCP server in ai-agents, and never creates those namespaces', () => {
    const platform = parse(readFileSync(join(KNATIVE_DIR, 'platform', 'kustomization.yaml'), 'utf8')) as { resources: string[] }
    expect(platform.resources).toEqual(['access.yaml', 'recipes-mcp.yaml'])
    const access = loadManifests().filter((m) => m.file === 'platform/access.yaml')
    expect(new Set(access.map((m) => m.kind))).toEqual(new Set(['Role', 'RoleBinding']))
    expect(new Set(access.map((m) => m.namespace))).toEqual(new Set(['purko-system', 'ai-agents', 'mcp-server', 'sandbox-recipes']))
    // The registration of the recipes MCP server for agents, in the agent namespace.
    const registration = loadManifests().filter((m) => m.file === 'platform/recipes-mcp.yaml')
    expect(registration.map((m) => [m.kind, m.namespace, m.name])).toEqual([
      ['ServiceAccount', 'ai-agents', 'recipes-mcp-client'], ['Secret', 'ai-agents', 'recipes-mcp-token'], ['MCPServer', 'ai-agents', 'recipes'],
    ])
    // The namespaces themselves only for a cluster without them, applied by hand, in no kustomization.
    expect(loadManifests().filter((m) => m.file === 'platform/namespaces.yaml').map((m) => m.name)).toEqual(['purko-system', 'ai-agents', 'mcp-server', 'sandbox-recipes'])
  })

  it('ships the two recipe target namespaces at Pod Security baseline, warned and audited at restricted (recipes CONTRACT §1.1)', () => {
    const namespaces = loadManifests().filter((m) => m.file === 'platform/namespaces.yaml' && ['mcp-server', 'sandbox-recipes'].includes(m.name))
    expect(namespaces.map((m) => [m.name, m.doc.metadata.labels])).toEqual(['mcp-server', 'sandbox-recipes'].map((name) => [name, {
      'app.kubernetes.io/part-of': 'kinetic',
      'pod-security.kubernetes.io/enforce': 'baseline',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    }]))
  })

  it('installs the purko.io CRDs from crds/ rather than a copy', () => {
    expect(kustomization.resources).toContain('../crds')
  })

  it('rewrites the bare image name every Service uses, with no registry host in knative/', () => {
    expect(kustomization.images.map((i) => i.name)).toEqual(['kinetic'])
    const images = loadManifests().filter((m) => m.kind === 'Service' && m.apiVersion === 'serving.knative.dev/v1')
      .flatMap((m) => m.doc.spec.template.spec.containers.map((c: { image: string }) => c.image))
    expect(new Set(images)).toEqual(new Set(['kinetic']))
    for (const file of yamlFiles()) {
      const text = readFileSync(join(KNATIVE_DIR, file), 'utf8')
      // A registry host is the part before the first slash when it holds a dot or a port.
      expect(text, file).not.toMatch(/image:\s*[\w.-]+[.:][\w.-]*\//)
    }
  })

  it('gives step Jobs the Services\' own image: every Service\'s KINETIC_EXECUTOR_IMAGE is a replacement target', () => {
    const workflowServices = loadManifests()
      .filter((m) => m.kind === 'Service' && m.apiVersion === 'serving.knative.dev/v1')
      .filter((m) => m.doc.spec.template.spec.containers[0].env?.some((e: { name: string }) => e.name === 'KINETIC_EXECUTOR_IMAGE'))
      .map((m) => m.name)
    expect(workflowServices.sort()).toEqual(['agent-changed', 'mcpserver-changed', 'resync-tick', 'step-job-finished', 'workflow-changed'])
    const [replacement] = kustomization.replacements
    expect(replacement?.source).toEqual({ kind: 'Service', name: 'workflow-changed', fieldPath: 'spec.template.spec.containers.0.image' })
    expect(replacement?.targets.map((t) => t.select.name).sort()).toEqual(workflowServices)
    for (const target of replacement?.targets ?? []) {
      expect(target.fieldPaths).toEqual(['spec.template.spec.containers.0.env.[name=KINETIC_EXECUTOR_IMAGE].value'])
    }
  })
})
