// spec §5.5 kind mapping, §5.6 replicas, §5.1 placement, §5.3 owner references, and
// buildManifests' deploy order (spec §7.11: copied Secrets, Service, workload object, MCPServer).
import { describe, expect, it } from 'vitest'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { canonicalJson } from '../../shared/recipe/plan/digest.js'
import { buildManifests, jobNameOf, testJobManifest, workloadManifest } from '../../shared/recipe/plan/manifests.js'
import { RECIPE, recipeWith, rendered, renderedTest, renderOk } from './manifest-fixtures.js'
import { createHash } from 'node:crypto'

type Obj = Record<string, any>
const build = (fields: Record<string, unknown>, revision = 1): Obj => workloadManifest(RECIPE, rendered({ image: 'img:1', ...fields }), revision) as Obj
const selector = { matchLabels: { 'app.kubernetes.io/instance': 'recipes-demo-shop-w-81f5be35' } }

describe('kind mapping (spec §5.5)', () => {
  it.each([
    ['Deployment', { kind: 'Deployment' }, 'apps/v1', { selector, strategy: { type: 'RollingUpdate' } }],
    ['Deployment Recreate', { kind: 'Deployment', strategy: 'Recreate' }, 'apps/v1', { selector, strategy: { type: 'Recreate' } }],
    ['StatefulSet', { kind: 'StatefulSet' }, 'apps/v1', {
      selector, serviceName: 'recipes-demo-shop-w-81f5be35', podManagementPolicy: 'OrderedReady',
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
    }],
    ['StatefulSet Parallel, Delete', { kind: 'StatefulSet', podManagementPolicy: 'Parallel', persistentVolumeClaimRetention: 'Delete' }, 'apps/v1', {
      selector, serviceName: 'recipes-demo-shop-w-81f5be35', podManagementPolicy: 'Parallel',
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
    }],
    ['DaemonSet', { kind: 'DaemonSet' }, 'apps/v1', { selector, updateStrategy: { type: 'RollingUpdate' } }],
    ['Job', { kind: 'Job' }, 'batch/v1', { backoffLimit: 0 }],
    ['Job with settings', { kind: 'Job', job: { backoffLimit: 2, activeDeadlineSeconds: 600, ttlSecondsAfterFinished: 60 } }, 'batch/v1',
      { backoffLimit: 2, activeDeadlineSeconds: 600, ttlSecondsAfterFinished: 60 }],
    ['CronJob defaults', { kind: 'CronJob', schedule: '0 3 * * *' }, 'batch/v1', {
      schedule: '0 3 * * *', concurrencyPolicy: 'Forbid', successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1, suspend: false,
    }],
    ['CronJob settings', { kind: 'CronJob', schedule: '0 * * * *', cronJob: { timeZone: 'Etc/UTC', concurrencyPolicy: 'Replace', startingDeadlineSeconds: 300, successfulJobsHistoryLimit: 5, failedJobsHistoryLimit: 2, suspend: true } }, 'batch/v1', {
      schedule: '0 * * * *', timeZone: 'Etc/UTC', concurrencyPolicy: 'Replace', startingDeadlineSeconds: 300, successfulJobsHistoryLimit: 5, failedJobsHistoryLimit: 2, suspend: true,
    }],
  ])('%s', (_label, fields, apiVersion, expected) => {
    const o = build({ name: 'w', ...fields })
    expect(o.apiVersion).toBe(apiVersion)
    const { template: _t, jobTemplate: _j, volumeClaimTemplates: _v, ...rest } = o.spec
    expect(rest).toEqual(expected)
  })

  it('Job and CronJob pods never restart; the CronJob job template is the Job spec', () => {
    const job = build({ name: 'w', kind: 'Job', job: { backoffLimit: 1 } })
    const cron = build({ name: 'w', kind: 'CronJob', schedule: '0 3 * * *', job: { backoffLimit: 1 } })
    expect(job.spec.template.spec.restartPolicy).toBe('Never')
    expect(cron.spec.jobTemplate.spec).toEqual(job.spec)
    expect(cron.spec.jobTemplate.metadata.labels['purko.io/workload']).toBe('w')
  })

  it('a Job is named base(w)-<h8> over its canonical rendered spec: same spec same name, changed spec new name', () => {
    const a = build({ name: 'w', kind: 'Job', args: ['migrate'] })
    const h8 = createHash('sha256').update(canonicalJson(a.spec)).digest('hex').slice(0, 8)
    expect(a.metadata.name).toBe(`recipes-demo-shop-w-81f5be35-${h8}`)
    expect(build({ name: 'w', kind: 'Job', args: ['migrate'] }, 9).metadata.name).toBe(a.metadata.name)
    expect(build({ name: 'w', kind: 'Job', args: ['migrate', '--v2'] }).metadata.name).not.toBe(a.metadata.name)
    expect(jobNameOf(RECIPE, rendered({ name: 'w', kind: 'Job', image: 'img:1', args: ['migrate'] }))).toBe(a.metadata.name)
  })

  it('StatefulSet claim templates: name, accessModes (default ReadWriteOnce), storage, storageClassName when set, recipe labels', () => {
    const o = build({ name: 'w', kind: 'StatefulSet', volumeClaimTemplates: [
      { name: 'data', storage: '20Gi' },
      { name: 'logs', storage: '1Gi', accessModes: ['ReadWriteOncePod'], storageClassName: 'fast', mountPath: '/logs' },
    ] })
    expect(o.spec.volumeClaimTemplates.map((c: Obj) => [c.metadata.name, c.spec])).toEqual([
      ['data', { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '20Gi' } } }],
      ['logs', { accessModes: ['ReadWriteOncePod'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'fast' }],
    ])
    expect(o.spec.volumeClaimTemplates[0].metadata.labels).toEqual(o.spec.template.metadata.labels)
  })

  it('stdio workloads get no workload object (the MCPServer controller runs them)', () => {
    expect(workloadManifest(RECIPE, rendered({ name: 'w', kind: 'Deployment', image: 'i', transport: 'stdio', replicas: 1 }), 1)).toBeUndefined()
  })
})

describe('replicas (spec §5.6)', () => {
  it.each([
    ['Deployment set', { kind: 'Deployment', replicas: 3 }, 3],
    ['Deployment set to 0', { kind: 'Deployment', replicas: 0 }, 0],
    ['Deployment absent: never written', { kind: 'Deployment' }, undefined],
    ['StatefulSet set', { kind: 'StatefulSet', replicas: 2 }, 2],
    ['StatefulSet absent', { kind: 'StatefulSet' }, undefined],
  ])('%s', (_label, fields, expected) => {
    const o = build({ name: 'w', ...fields })
    expect(o.spec.replicas).toBe(expected)
    expect('replicas' in o.spec).toBe(expected !== undefined)
  })
})

describe('test Jobs (spec §2.9)', () => {
  it('run in the sandbox with activeDeadlineSeconds = timeoutSeconds, backoffLimit, Never, test labels and the revision in the name', () => {
    const job = testJobManifest(RECIPE, renderedTest({ name: 'smoke', image: 'curl:8', args: ['-fsS', 'http://x/'], timeoutSeconds: 120 }), 4) as Obj
    expect(job.metadata.name).toBe('recipes-demo-shop-test-smoke-2460e744-r4')
    expect(job.metadata.namespace).toBe('sandbox-recipes')
    expect(job.metadata.labels['purko.io/test']).toBe('smoke')
    expect(job.metadata.labels['purko.io/component']).toBe('test')
    expect(job.spec.activeDeadlineSeconds).toBe(120)
    expect(job.spec.backoffLimit).toBe(0)
    expect(job.spec.template.spec.restartPolicy).toBe('Never')
    expect(job.spec.template.metadata.labels).toEqual({
      'app.kubernetes.io/managed-by': 'kinetic', 'purko.io/recipe': 'shop', 'purko.io/recipe-namespace': 'recipes-demo',
      'purko.io/recipe-uid': RECIPE.uid, 'purko.io/test': 'smoke',
    })
    expect(job.spec.template.spec.containers[0].name).toBe('smoke')
  })
})

describe('buildManifests: placement, owners and deploy order', () => {
  const db = rendered({ name: 'db', kind: 'StatefulSet', image: 'postgres:16', ports: [{ name: 'pg', port: 5432 }],
    envSecret: [{ name: 'PW', secretName: 'shop-db', key: 'password' }] })
  const web = rendered({ name: 'web', kind: 'Deployment', image: 'nginx', dependsOn: ['db', 'cache'], ports: [{ name: 'http', port: 80 }] })
  const mcp = rendered({ name: 'tools', kind: 'Deployment', image: 'mcp', ports: [{ name: 'mcp', port: 3001 }], transport: 'http',
    mcp: { auth: 'bearer', tokenSecret: { secretName: 'tok', key: 'token' } } })
  const steps = [{ name: 'a', agent: 'researcher', task: 'go' }]
  const objects = buildManifests(recipeWith({ workloads: [] }), renderOk([db, web, mcp], {
    excluded: ['cache'], steps, workflow: { parallelism: 1, failureStrategy: 'failFast', timeout: '30m' },
    tests: [renderedTest({ name: 'smoke', image: 'curl', envSecret: [{ name: 'T', secretName: 'tok', key: 'token' }] })],
  }), recipeConfig({}), 5)

  it('orders children per workload (Secrets, Service, object, MCPServer), then the Workflow, then tests', () => {
    expect(objects.children.map((c) => `${c.kind} ${c.namespace}/${c.name}`)).toEqual([
      'Secret sandbox-recipes/recipes-demo-shop-db-ea96027d-env',
      'Service sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'Service sandbox-recipes/recipes-demo-shop-web-0f1506de',
      'Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de',
      'Secret mcp-server/recipes-demo-shop-tools-fa0caeae-mcp-token',
      'Service mcp-server/recipes-demo-shop-tools-fa0caeae',
      'Deployment mcp-server/recipes-demo-shop-tools-fa0caeae',
      'MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae',
      `Workflow recipes-demo/${objects.workflow!.name}`,
      'Secret sandbox-recipes/recipes-demo-shop-test-smoke-2460e744-env',
      'Job sandbox-recipes/recipes-demo-shop-test-smoke-2460e744-r5',
    ])
    expect(objects.children.filter((c) => c.afterReady).map((c) => c.kind)).toEqual(['MCPServer'])
  })

  it('drops dependsOn edges to excluded workloads', () => {
    expect(objects.workloads.map((w) => [w.name, w.dependsOn, w.order])).toEqual([['db', [], 0], ['web', ['db'], 1], ['tools', [], 2]])
  })

  it('owns children in the recipe namespace only, and every top-level child carries its digest and revision', () => {
    for (const c of objects.children) {
      expect(c.manifest.metadata.annotations?.['purko.io/manifest-digest']).toBe(c.digest)
      expect(c.manifest.metadata.labels['purko.io/revision']).toBe('5')
      expect(c.manifest.metadata.ownerReferences).toEqual(c.namespace === 'recipes-demo'
        ? [{ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', name: 'shop', uid: RECIPE.uid, controller: true, blockOwnerDeletion: true }]
        : undefined)
    }
  })

  it('gives every child in a target namespace equal to the recipe namespace an owner', () => {
    const own = buildManifests(recipeWith({ workloads: [] }), renderOk([rendered({ name: 'db', kind: 'Deployment', image: 'x' }, 'recipes-demo')]), recipeConfig({}), 1)
    expect(own.children[0]!.manifest.metadata.ownerReferences?.[0]?.uid).toBe(RECIPE.uid)
  })
})
