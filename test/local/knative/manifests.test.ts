import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadKnativeManifests } from '../../../local/knative/manifests.js'

describe('loading knative/', () => {
  it('reads multi-document files in nested folders and applies the kustomization namespace', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kinetic-knative-'))
    mkdirSync(join(dir, 'triggers'))
    writeFileSync(join(dir, 'kustomization.yaml'), 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a\nresources: []\n')
    writeFileSync(join(dir, 'broker.yaml'), 'apiVersion: eventing.knative.dev/v1\nkind: Broker\nmetadata:\n  name: default\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  namespace: other\n')
    writeFileSync(join(dir, 'triggers', 'a.yml'), 'apiVersion: eventing.knative.dev/v1\nkind: Trigger\nmetadata:\n  name: a\nspec:\n  broker: default\n  subscriber:\n    uri: http://x\n')

    const m = loadKnativeManifests(dir)

    expect(m.brokers.map((b) => `${b.metadata.namespace}/${b.metadata.name}`)).toEqual(['team-a/default'])
    expect(m.triggers.map((t) => [t.metadata.name, t.file])).toEqual([['a', join('triggers', 'a.yml')]])
    expect(m.others.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(['other/sa'])
  })

  it('names the file of a YAML error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kinetic-knative-'))
    writeFileSync(join(dir, 'bad.yaml'), 'kind: [\n')
    expect(() => loadKnativeManifests(dir)).toThrow(/bad\.yaml/)
  })

  it('finds, in the shipped knative/, a Service for every Trigger subscriber and a Broker for every source sink', () => {
    const m = loadKnativeManifests(join(import.meta.dirname, '../../../knative'))
    const services = new Set(m.services.map((s) => s.metadata.name))
    const brokers = new Set(m.brokers.map((b) => b.metadata.name))
    expect(m.triggers.length).toBeGreaterThan(0)
    for (const t of m.triggers) {
      expect(services.has(t.spec.subscriber.ref?.name ?? ''), `Trigger ${t.metadata.name}`).toBe(true)
      expect(brokers.has(t.spec.broker ?? 'default'), `Trigger ${t.metadata.name}`).toBe(true)
    }
    for (const s of [...m.apiServerSources, ...m.pingSources]) {
      expect(s.spec.sink?.ref?.kind, `source ${s.metadata.name}`).toBe('Broker')
      expect(brokers.has(s.spec.sink?.ref?.name ?? ''), `source ${s.metadata.name}`).toBe(true)
    }
  })
})
