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

/** The opt-in Components under knative/components/ and the files each adds. */
const COMPONENTS: Record<string, string[]> = {
  'console-proxy': ['impersonator.yaml'],
  'console-anonymous-read': ['reader.yaml'],
}

interface Component {
  kind: string
  resources: string[]
  patches: Array<{ target: { group: string; kind: string; name: string }; patch: string }>
}
const readComponent = (name: string) => parse(readFileSync(join(KNATIVE_DIR, 'components', name, 'kustomization.yaml'), 'utf8')) as Component

const consoleService = () => structuredClone(loadManifests().find((m) => m.file === 'services/console.yaml')!.doc) as Record<string, any>

/** The JSON pointer's parent and last key (RFC 6901 escapes). */
function locate(doc: unknown, path: string): { parent: any; key: string } {
  const keys = path.split('/').slice(1).map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'))
  const key = keys.pop()!
  let parent: any = doc
  for (const k of keys) {
    parent = parent?.[k]
    if (parent === undefined) throw new Error(`${path}: no such path`)
  }
  return { parent, key }
}

/** Applies a component's JSON 6902 patches (the test, replace and add operations it uses) as kustomize does, failing on a failed test. */
function applyComponent(service: Record<string, any>, name: string): Record<string, any> {
  for (const { target, patch } of readComponent(name).patches) {
    expect([target.group, target.kind, target.name]).toEqual(['serving.knative.dev', 'Service', service.metadata.name])
    for (const op of parse(patch) as Array<{ op: string; path: string; value: unknown }>) {
      const { parent, key } = locate(service, op.path)
      if (op.op === 'test') {
        if (JSON.stringify(parent[key]) !== JSON.stringify(op.value)) throw new Error(`${name}: test failed at ${op.path}`)
      } else if (op.op === 'replace') {
        if (!(key in parent)) throw new Error(`${name}: nothing to replace at ${op.path}`)
        parent[key] = op.value
      } else if (op.op === 'add') {
        if (Array.isArray(parent) && key === '-') parent.push(op.value)
        else parent[key] = op.value
      } else throw new Error(`${name}: unexpected operation ${op.op}`)
    }
  }
  return service
}
const patched = (names: string[]) => names.reduce(applyComponent, consoleService())

describe('kubectl apply -k knative/ installs everything', () => {
  it('lists every manifest file in knative/, each once, so none is left out of the install', () => {
    const files = yamlFiles().filter((f) => f !== 'kustomization.yaml' && !f.startsWith('platform/') && !f.startsWith('components/'))
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

  it('ships the two recipe target namespaces at Pod Security baseline, warned and audited at restricted (spec §1.1)', () => {
    const namespaces = loadManifests().filter((m) => m.file === 'platform/namespaces.yaml' && ['mcp-server', 'sandbox-recipes'].includes(m.name))
    expect(namespaces.map((m) => [m.name, m.doc.metadata.labels])).toEqual(['mcp-server', 'sandbox-recipes'].map((name) => [name, {
      'app.kubernetes.io/part-of': 'kinetic',
      'pod-security.kubernetes.io/enforce': 'baseline',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    }]))
  })

  it('ships the console\'s opt-in components as kustomize Components that the base does not include, each listing its own files', () => {
    expect(Object.keys(kustomization)).not.toContain('components')
    for (const [name, files] of Object.entries(COMPONENTS)) {
      const component = readComponent(name)
      expect(component.kind, name).toBe('Component')
      expect(component.resources, name).toEqual(files)
      const inFolder = yamlFiles().filter((f) => f.startsWith(`components/${name}/`) && !f.endsWith('/kustomization.yaml'))
      expect(inFolder.map((f) => f.slice(`components/${name}/`.length)), name).toEqual(files)
    }
  })

  it('console-proxy, applied to the shipped console Service, switches it to proxy sign-in from the queue-proxy with the proxy secret and makes it cluster-local', () => {
    const service = patched(['console-proxy'])
    const env = service.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>
    expect(env.find((e) => e.name === 'KINETIC_CONSOLE_AUTH')?.value).toBe('proxy')
    expect(env.find((e) => e.name === 'KINETIC_CONSOLE_TRUSTED_PROXIES')?.value).toBe('127.0.0.1/32,::1/128')
    // The queue-proxy is every request's peer under Knative: the proxy must prove itself with the secret.
    expect(env.find((e) => e.name === 'KINETIC_CONSOLE_PROXY_SECRET')).toEqual({
      name: 'KINETIC_CONSOLE_PROXY_SECRET', valueFrom: { secretKeyRef: { name: 'console-proxy', key: 'secret' } },
    })
    expect(env.find((e) => e.name === 'KINETIC_CONSOLE_ANONYMOUS_READ')?.value).toBe('false')
    expect(service.metadata.labels['networking.knative.dev/visibility']).toBe('cluster-local')
  })

  it('console-anonymous-read turns anonymous reads on and nothing else; both components apply together', () => {
    const alone = patched(['console-anonymous-read'])
    const env = alone.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>
    expect(env.find((e) => e.name === 'KINETIC_CONSOLE_ANONYMOUS_READ')?.value).toBe('true')
    expect(env.find((e) => e.name === 'KINETIC_CONSOLE_AUTH')?.value).toBe('token')
    expect(env.find((e) => e.name === 'KINETIC_CONSOLE_ACTIONS')?.value).toBe('false')
    const both = patched(['console-proxy', 'console-anonymous-read']).spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>
    expect(['KINETIC_CONSOLE_AUTH', 'KINETIC_CONSOLE_ANONYMOUS_READ'].map((n) => both.find((e) => e.name === n)?.value)).toEqual(['proxy', 'true'])
  })

  it('a component whose positional guard no longer matches the Service fails instead of patching another variable', () => {
    const service = consoleService()
    const env = service.spec.template.spec.containers[0].env as unknown[]
    env.splice(1, 0, { name: 'SOMETHING_NEW', value: 'x' })
    expect(() => applyComponent(service, 'console-proxy')).toThrow(/test failed/)
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
