/**
 * Workload objects per kind (spec §5.5 kind mapping, §5.6 replicas), test Jobs (§2.9) and
 * `buildManifests`: every child of one revision (spec §5, spec §1 step 6) in deploy order, each
 * with the labels and annotations of spec §5.3 and its `purko.io/manifest-digest`. Pure: the same
 * recipe, render result, configuration and revision give byte-identical manifests.
 *
 * | Kind        | Object                                                              |
 * |-------------|---------------------------------------------------------------------|
 * | Deployment  | `replicas` (only when set), `selector`, `strategy.type`, template   |
 * | StatefulSet | `replicas`, `selector`, `serviceName`, `podManagementPolicy`, PVC retention, `volumeClaimTemplates`, template |
 * | DaemonSet   | `selector`, `updateStrategy: RollingUpdate`, template                |
 * | Job         | `backoffLimit`, `activeDeadlineSeconds`/`ttlSecondsAfterFinished` when set, template (`Never`); named `base(w)-<h8>` |
 * | CronJob     | `schedule`, `timeZone`, `concurrencyPolicy`, `startingDeadlineSeconds`, history limits, `suspend`, `jobTemplate` |
 */
import type { WorkflowRecipe } from '../../schemas/workflowrecipe.js'
import { childWorkflowManifest } from './child-workflow.js'
import type { RecipeConfig } from './config.js'
import { canonicalJson, manifestDigest, withDigest } from './digest.js'
import { selectorLabels, testJobLabels, testPodLabels, workloadObjectLabels, workloadPodLabels, type RecipeRef } from './labels.js'
import { mcpServerManifest } from './mcp.js'
import { envSecretName, jobWorkloadName, mcpServerName, mcpTokenSecretName, serviceName, testEnvSecretName, testJobName } from './names.js'
import { childMeta, type Manifest, type RecipeChild, type RecipeObjects, type TestObjects, type WorkloadObjects, type WorkloadSource } from './objects.js'
import { compact, podTemplateOf, type Json } from './pod-template.js'
import type { RenderOk, RenderedTest } from './rendered.js'
import { copiedSecretManifest, envSecretCopy, tokenSecretCopy } from './secrets.js'
import { hasService, serviceManifest } from './services.js'

/** The recipe as its children reference it (uid `""` before the API server assigned one). */
export function recipeRefOf(recipe: Pick<WorkflowRecipe, 'metadata'>): RecipeRef {
  return { name: recipe.metadata.name ?? '', namespace: recipe.metadata.namespace ?? '', uid: recipe.metadata.uid ?? '' }
}

function podTemplate(recipe: RecipeRef, w: WorkloadSource, restartPolicy: 'Always' | 'Never'): Json {
  return podTemplateOf(w, workloadPodLabels(recipe, w.name, w.base), restartPolicy, envSecretName(w.base))
}

/** The Job spec of a Job workload or of a CronJob's job template. */
export function jobSpecOf(recipe: RecipeRef, w: WorkloadSource): Json {
  return compact({
    backoffLimit: w.job?.backoffLimit ?? 0,
    activeDeadlineSeconds: w.job?.activeDeadlineSeconds,
    ttlSecondsAfterFinished: w.job?.ttlSecondsAfterFinished,
    template: podTemplate(recipe, w, 'Never'),
  })
}

/** The name of a Job workload: `base(w)-<h8>` over its canonical rendered Job spec. */
export function jobNameOf(recipe: RecipeRef, w: WorkloadSource): string {
  return jobWorkloadName(w.base, canonicalJson(jobSpecOf(recipe, w)))
}

/** spec §5.5: the workload object of a rendered workload (without digest); undefined for `stdio` (the MCPServer controller runs it). */
export function workloadManifest(recipe: RecipeRef, w: WorkloadSource, revision: number): Manifest | undefined {
  if (w.transport === 'stdio') return undefined
  const labels = workloadObjectLabels(recipe, 'workload', w.name, w.base, revision)
  const selector = { matchLabels: selectorLabels(w.base) }
  switch (w.kind) {
    case 'Deployment':
      return {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: childMeta(recipe, w.base, w.namespace, labels),
        spec: compact({
          replicas: w.replicas,
          selector,
          strategy: { type: w.strategy ?? 'RollingUpdate' },
          template: podTemplate(recipe, w, 'Always'),
        }),
      }
    case 'StatefulSet': {
      const claimLabels = workloadPodLabels(recipe, w.name, w.base)
      const claims = (w.volumeClaimTemplates ?? []).map((c) => ({
        metadata: { name: c.name, labels: { ...claimLabels } },
        spec: compact({
          accessModes: c.accessModes && c.accessModes.length > 0 ? [...c.accessModes] : ['ReadWriteOnce'],
          resources: { requests: { storage: c.storage } },
          storageClassName: c.storageClassName,
        }),
      }))
      return {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: childMeta(recipe, w.base, w.namespace, labels),
        spec: compact({
          replicas: w.replicas,
          selector,
          serviceName: serviceName(w.base),
          podManagementPolicy: w.podManagementPolicy ?? 'OrderedReady',
          persistentVolumeClaimRetentionPolicy: { whenDeleted: w.persistentVolumeClaimRetention ?? 'Retain', whenScaled: 'Retain' },
          volumeClaimTemplates: claims.length > 0 ? claims : undefined,
          template: podTemplate(recipe, w, 'Always'),
        }),
      }
    }
    case 'DaemonSet':
      return {
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: childMeta(recipe, w.base, w.namespace, labels),
        spec: {
          selector,
          updateStrategy: { type: 'RollingUpdate' },
          template: podTemplate(recipe, w, 'Always'),
        },
      }
    case 'Job': {
      const spec = jobSpecOf(recipe, w)
      return {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: childMeta(recipe, jobWorkloadName(w.base, canonicalJson(spec)), w.namespace, labels),
        spec,
      }
    }
    case 'CronJob': {
      const c = w.cronJob
      return {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: childMeta(recipe, w.base, w.namespace, labels),
        spec: compact({
          schedule: w.schedule ?? '',
          timeZone: c?.timeZone,
          concurrencyPolicy: c?.concurrencyPolicy ?? 'Forbid',
          startingDeadlineSeconds: c?.startingDeadlineSeconds,
          successfulJobsHistoryLimit: c?.successfulJobsHistoryLimit ?? 3,
          failedJobsHistoryLimit: c?.failedJobsHistoryLimit ?? 1,
          suspend: c?.suspend ?? false,
          jobTemplate: {
            metadata: { labels: workloadPodLabels(recipe, w.name, w.base) },
            spec: jobSpecOf(recipe, w),
          },
        }),
      }
    }
  }
}

/** A test Job (spec §2.9, §5.2-§5.4): sandbox namespace, `activeDeadlineSeconds: timeoutSeconds`, `restartPolicy: Never`. */
export function testJobManifest(recipe: RecipeRef, t: RenderedTest, revision: number): Manifest {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: childMeta(recipe, testJobName(recipe.namespace, recipe.name, t.name, revision), t.namespace, testJobLabels(recipe, t.name, revision)),
    spec: {
      backoffLimit: t.backoffLimit ?? 0,
      activeDeadlineSeconds: t.timeoutSeconds ?? 300,
      template: podTemplateOf(t, testPodLabels(recipe, t.name), 'Never', testEnvSecretName(recipe.namespace, recipe.name, t.name)),
    },
  }
}

function child(manifest: Manifest, fields: Omit<RecipeChild, 'manifest' | 'digest' | 'kind' | 'namespace' | 'name'>): RecipeChild {
  const withDig = withDigest(manifest)
  return {
    ...fields,
    kind: manifest.kind,
    namespace: manifest.metadata.namespace,
    name: manifest.metadata.name,
    manifest: withDig,
    digest: manifestDigest(withDig),
  }
}

function workloadObjects(recipe: RecipeRef, w: WorkloadSource, order: number, included: Set<string>, revision: number): WorkloadObjects {
  const children: RecipeChild[] = []
  const at = { workload: w.name, order }
  if ((w.envSecret ?? []).length > 0) {
    const copy = envSecretCopy(recipe, w.namespace, envSecretName(w.base), w.envSecret ?? [])
    children.push(child(copiedSecretManifest(recipe, copy, { workload: w.name }, revision), { ...at, component: 'secret', secretCopy: copy }))
  }
  if (w.transport && w.mcp?.auth === 'bearer' && w.mcp.tokenSecret) {
    const copy = tokenSecretCopy(recipe, w.namespace, mcpTokenSecretName(w.base), w.mcp.tokenSecret)
    children.push(child(copiedSecretManifest(recipe, copy, { workload: w.name }, revision), { ...at, component: 'secret', secretCopy: copy }))
  }
  const service = serviceManifest(recipe, w, revision)
  if (service) children.push(child(service, { ...at, component: 'service' }))
  const object = workloadManifest(recipe, w, revision)
  if (object) children.push(child(object, { ...at, component: 'workload' }))
  const mcp = mcpServerManifest(recipe, w, revision)
  if (mcp) children.push(child(mcp, { ...at, component: 'mcpserver', ...(w.transport === 'http' ? { afterReady: true } : {}) }))

  const result: WorkloadObjects = {
    name: w.name,
    kind: w.kind,
    namespace: w.namespace,
    base: w.base,
    objectName: object ? object.metadata.name : mcpServerName(w.base),
    dependsOn: (w.dependsOn ?? []).filter((d) => included.has(d)),
    order,
    children,
  }
  if (hasService(w)) result.serviceName = serviceName(w.base)
  if (w.transport) {
    result.mcpServerName = mcpServerName(w.base)
    result.transport = w.transport
  }
  return result
}

/**
 * Every child object of one revision (spec §5) in deploy order: per included workload in
 * `resolved.order` its copied Secrets, Service, workload object and MCPServer (for `http`
 * marked `afterReady`), then the child Workflow (with `steps`), then each test's copied Secret
 * and Job. `revision` is the revision that writes them (`purko.io/revision`, test Job names).
 * Copied Secrets carry no `data`: see `withSecretData` in secrets.ts.
 */
export function buildManifests(recipe: WorkflowRecipe, rendered: RenderOk, _config: RecipeConfig, revision: number): RecipeObjects {
  const ref = recipeRefOf(recipe)
  const included = new Set(rendered.order)
  const byName = new Map(rendered.workloads.map((w) => [w.name, w]))
  const ordered = rendered.order.map((n) => byName.get(n)).filter((w): w is NonNullable<typeof w> => w !== undefined)
  const workloads = ordered.map((w, i) => workloadObjects(ref, w, i, included, revision))

  const steps = rendered.steps ?? []
  const workflow = steps.length > 0
    ? child(childWorkflowManifest(ref, recipe.spec.description, rendered.workflow, steps, revision), { component: 'workflow', order: ordered.length })
    : undefined

  const tests: TestObjects[] = rendered.tests.map((t) => {
    const at = { test: t.name, order: ordered.length + 1 }
    const children: RecipeChild[] = []
    if ((t.envSecret ?? []).length > 0) {
      const copy = envSecretCopy(ref, t.namespace, testEnvSecretName(ref.namespace, ref.name, t.name), t.envSecret ?? [])
      children.push(child(copiedSecretManifest(ref, copy, { test: t.name }, revision), { ...at, component: 'secret', secretCopy: copy }))
    }
    const job = child(testJobManifest(ref, t, revision), { ...at, component: 'test' })
    children.push(job)
    return { name: t.name, namespace: t.namespace, jobName: job.name, children }
  })

  return {
    revision,
    workloads,
    ...(workflow ? { workflow } : {}),
    tests,
    children: [...workloads.flatMap((w) => w.children), ...(workflow ? [workflow] : []), ...tests.flatMap((t) => t.children)],
  }
}
