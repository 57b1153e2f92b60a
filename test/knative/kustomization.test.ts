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
    const files = yamlFiles().filter((f) => f !== 'kustomization.yaml')
    const listed = kustomization.resources.filter((r) => r.endsWith('.yaml'))
    expect([...listed].sort()).toEqual(files)
    expect(new Set(kustomization.resources).size).toBe(kustomization.resources.length)
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
