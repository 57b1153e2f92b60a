/**
 * The shape of a recipe's desired children (spec §5): manifests with their metadata
 * (spec §5.3 owner references), and the `RecipeObjects` that `buildManifests` returns. Pure types
 * and one metadata helper.
 */
import { API_VERSION } from '../../schemas/labels.js'
import type { Component, RecipeRef } from './labels.js'
import type { PodSource } from './pod-template.js'

/** Metadata of a desired child. */
export interface ManifestMeta {
  name: string
  namespace: string
  labels: Record<string, string>
  annotations?: Record<string, string>
  ownerReferences?: OwnerReference[]
}

export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid: string
  controller: boolean
  blockOwnerDeletion: boolean
}

/** A desired Kubernetes object, holding only the fields Kinetic sets. */
export interface Manifest {
  apiVersion: string
  kind: string
  metadata: ManifestMeta
  [field: string]: unknown
}

/** One source key of a copied Secret (spec §5.8): never a value. */
export interface SecretCopySource {
  namespace: string
  name: string
  key: string
  /** Key in the copied Secret (the environment variable name; `token` for MCP tokens). */
  env: string
  optional: boolean
}

/** spec §7.9 snapshot form of a copied Secret. */
export interface SecretCopy {
  kind: 'SecretCopy'
  namespace: string
  name: string
  sources: SecretCopySource[]
}

/** One desired child with its digest and its place in the deploy order. */
export interface RecipeChild {
  component: Component
  kind: string
  namespace: string
  name: string
  /** Workload it belongs to (workload children only). */
  workload?: string
  /** Test it belongs to (test children only). */
  test?: string
  /** Index of its workload in `resolved.order`; tests and the Workflow come after every workload. */
  order: number
  /** The desired manifest, labels and `purko.io/manifest-digest` included; copied Secrets carry no `data`. */
  manifest: Manifest
  /** `purko.io/manifest-digest` of the manifest. */
  digest: string
  /** Set on copied Secrets: which source keys to copy (the caller fills in the bytes). */
  secretCopy?: SecretCopy
  /** Written only once the workload is Ready (the MCPServer of a `transport: http` workload, spec §5.9). */
  afterReady?: boolean
}

/** The children of one included workload, in write order (copied Secrets, Service, workload object, MCPServer). */
export interface WorkloadObjects {
  name: string
  kind: string
  namespace: string
  base: string
  /** Name of the main object (`base(w)`, or `base(w)-<h8>` for a Job; the MCPServer for `stdio`). */
  objectName: string
  serviceName?: string
  mcpServerName?: string
  transport?: 'http' | 'stdio'
  /** Included workloads it depends on. */
  dependsOn: string[]
  order: number
  children: RecipeChild[]
}

export interface TestObjects {
  name: string
  namespace: string
  jobName: string
  children: RecipeChild[]
}

/** Every child of one revision (spec §5), each with labels, annotations and digest. */
export interface RecipeObjects {
  revision: number
  workloads: WorkloadObjects[]
  workflow?: RecipeChild
  tests: TestObjects[]
  /** Every child in deploy order: workloads in `resolved.order`, then the child Workflow, then tests. */
  children: RecipeChild[]
}

/** ownerReference to the recipe (`controller: true`, `blockOwnerDeletion: true`). */
export function recipeOwnerReference(recipe: RecipeRef): OwnerReference {
  return { apiVersion: API_VERSION, kind: 'WorkflowRecipe', name: recipe.name, uid: recipe.uid, controller: true, blockOwnerDeletion: true }
}

/**
 * Metadata of a child: children in the recipe's own namespace are owned by the recipe; children
 * elsewhere carry no ownerReference (Kubernetes forbids cross-namespace owners).
 */
export function childMeta(recipe: RecipeRef, name: string, namespace: string, labels: Record<string, string>, annotations?: Record<string, string>): ManifestMeta {
  const meta: ManifestMeta = { name, namespace, labels }
  if (annotations && Object.keys(annotations).length > 0) meta.annotations = annotations
  if (namespace === recipe.namespace) meta.ownerReferences = [recipeOwnerReference(recipe)]
  return meta
}

/** What the builders read from a rendered workload (structurally a `RenderedWorkload`). */
export interface WorkloadSource extends PodSource {
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Job' | 'CronJob'
  /** Target namespace (spec §5.1). */
  namespace: string
  /** `base(w)` (spec §5.2). */
  base: string
  replicas?: number
  strategy?: 'RollingUpdate' | 'Recreate'
  podManagementPolicy?: 'OrderedReady' | 'Parallel'
  persistentVolumeClaimRetention?: 'Retain' | 'Delete'
  schedule?: string
  cronJob?: {
    timeZone?: string
    concurrencyPolicy?: 'Allow' | 'Forbid' | 'Replace'
    startingDeadlineSeconds?: number
    successfulJobsHistoryLimit?: number
    failedJobsHistoryLimit?: number
    suspend?: boolean
  }
  job?: { backoffLimit?: number; activeDeadlineSeconds?: number; ttlSecondsAfterFinished?: number }
  service?: { internalTrafficPolicy?: 'Cluster' | 'Local'; sessionAffinity?: 'None' | 'ClientIP' }
  transport?: 'http' | 'stdio'
  mcp?: {
    port?: number
    path?: string
    stateless?: boolean
    category?: string
    icon?: string
    auth?: 'none' | 'bearer'
    tokenSecret?: { secretName: string; key: string }
  }
  dependsOn?: string[]
}
