import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseAllDocuments } from 'yaml'
import type { DeliverySpec, Destination } from './delivery.js'
import type { LabelSelector } from './label-selector.js'
import type { TriggerFilterSpec } from './trigger-filter.js'

/** Common shape of every document read from knative/. */
export interface Manifest<S = Record<string, unknown>> {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  spec: S
  /** The file it came from, relative to the folder that was read. */
  file: string
  /** The document as written (with the namespace filled in), for applying it elsewhere. */
  raw: Record<string, unknown>
}

/** ApiServerSource spec (sources.knative.dev/v1). */
export interface ApiServerSourceSpec {
  resources: Array<{ apiVersion: string; kind: string; selector?: LabelSelector }>
  mode?: 'Resource' | 'Reference'
  /** The identity the adapter watches as. */
  serviceAccountName?: string
  owner?: { apiVersion?: string; kind?: string }
  namespaceSelector?: LabelSelector
  sink?: Destination
  ceOverrides?: { extensions?: Record<string, string> }
}

/** PingSource spec (sources.knative.dev/v1). */
export interface PingSourceSpec {
  schedule?: string
  timezone?: string
  contentType?: string
  data?: string
  dataBase64?: string
  sink?: Destination
  ceOverrides?: { extensions?: Record<string, string> }
}

/** Trigger spec (eventing.knative.dev/v1). */
export interface TriggerSpec extends TriggerFilterSpec {
  broker?: string
  subscriber: Destination
  delivery?: DeliverySpec
}

/** Broker spec (eventing.knative.dev/v1). */
export interface BrokerSpec {
  delivery?: DeliverySpec
}

/** Everything the emulation needs from a knative/ folder. */
export interface KnativeManifests {
  brokers: Manifest<BrokerSpec>[]
  triggers: Manifest<TriggerSpec>[]
  apiServerSources: Manifest<ApiServerSourceSpec>[]
  pingSources: Manifest<PingSourceSpec>[]
  services: Manifest[]
  /** Every other object (RBAC, ServiceAccounts, ...), kept for callers that want them. */
  others: Manifest[]
}

/**
 * Reads every `*.yaml` / `*.yml` document under `dir` (recursively, multi-document files
 * included) and sorts the Knative kinds out. Objects without a namespace get the
 * kustomization's `namespace`, else `defaultNamespace`. Throws on YAML errors, naming the file.
 */
export function loadKnativeManifests(dir: string, defaultNamespace = 'default'): KnativeManifests {
  const files = listYaml(dir)
  const docs: Array<Record<string, unknown> & { file: string }> = []
  let kustomizeNamespace: string | undefined
  for (const file of files) {
    const rel = relative(dir, file)
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${rel}: ${doc.errors[0]?.message ?? 'invalid YAML'}`)
      const value = doc.toJSON() as unknown
      if (!value || typeof value !== 'object' || Array.isArray(value)) continue
      const obj = value as Record<string, unknown>
      if (obj.kind === 'Kustomization') {
        if (typeof obj.namespace === 'string' && rel === 'kustomization.yaml') kustomizeNamespace = obj.namespace
        continue
      }
      if (typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') continue
      docs.push({ ...obj, file: rel })
    }
  }
  const out: KnativeManifests = { brokers: [], triggers: [], apiServerSources: [], pingSources: [], services: [], others: [] }
  for (const doc of docs) {
    const meta = (doc.metadata ?? {}) as Record<string, unknown>
    const { file: _file, ...raw } = doc
    const m: Manifest = {
      apiVersion: doc.apiVersion as string,
      kind: doc.kind as string,
      metadata: {
        ...(meta as object),
        name: String(meta.name ?? ''),
        namespace: typeof meta.namespace === 'string' ? meta.namespace : (kustomizeNamespace ?? defaultNamespace),
      },
      spec: (doc.spec ?? {}) as Record<string, unknown>,
      file: doc.file,
      raw: { ...raw, metadata: { ...meta, namespace: typeof meta.namespace === 'string' ? meta.namespace : (kustomizeNamespace ?? defaultNamespace) } },
    }
    const group = m.apiVersion.split('/')[0]
    if (group === 'eventing.knative.dev' && m.kind === 'Broker') out.brokers.push(m as Manifest<BrokerSpec>)
    else if (group === 'eventing.knative.dev' && m.kind === 'Trigger') out.triggers.push(m as unknown as Manifest<TriggerSpec>)
    else if (group === 'sources.knative.dev' && m.kind === 'ApiServerSource') out.apiServerSources.push(m as unknown as Manifest<ApiServerSourceSpec>)
    else if (group === 'sources.knative.dev' && m.kind === 'PingSource') out.pingSources.push(m as Manifest<PingSourceSpec>)
    else if (group === 'serving.knative.dev' && m.kind === 'Service') out.services.push(m)
    else out.others.push(m)
  }
  return out
}

function listYaml(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) out.push(...listYaml(path))
    else if (name.endsWith('.yaml') || name.endsWith('.yml')) out.push(path)
  }
  return out
}
