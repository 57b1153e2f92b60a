// spec §7.9 revision snapshot ConfigMap, and RevisionTooLarge (§8.2).
import { describe, expect, it } from 'vitest'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { completedJobsOf, renderDigest, snapshot, withCompletedJob } from '../../shared/recipe/plan/snapshot.js'
import { RECIPE, recipeWith, rendered, renderedTest, renderOk } from './manifest-fixtures.js'

const config = recipeConfig({})
const recipe = recipeWith({ workloads: [{ name: 'db', kind: 'Deployment', image: 'x' }, { name: 'cache', kind: 'Deployment', image: 'x' }, { name: 'web', kind: 'Deployment', image: 'x' }] })
const web = rendered({ name: 'web', kind: 'Deployment', image: 'nginx', ports: [{ name: 'http', port: 80 }], envSecret: [{ name: 'PW', secretName: 'shop-db', key: 'password' }] })
const db = rendered({ name: 'db', kind: 'Deployment', image: 'pg' })
const result = renderOk([db, web], {
  inputs: { env: 'dev' }, computed: { mode: 'single' }, profile: 'dev', excluded: ['cache'],
  tests: [renderedTest({ name: 'smoke', image: 'curl' })],
})

describe('revision snapshot (spec §7.9)', () => {
  const s = snapshot(recipe, result, config, 3)
  if (!s.ok) throw new Error('snapshot failed')
  const data = s.configMap.data

  it('is ConfigMap <recipe>-rev-<N> in the recipe namespace, owned by the recipe, component revision', () => {
    expect(s.configMap.metadata.name).toBe('shop-rev-3')
    expect(s.configMap.metadata.namespace).toBe('recipes-demo')
    expect(s.configMap.metadata.labels['purko.io/component']).toBe('revision')
    expect(s.configMap.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'WorkflowRecipe', uid: RECIPE.uid, controller: true })
    expect(Object.keys(data).sort()).toEqual(['completed-jobs', 'digest', 'generation', 'manifests.json', 'resolved.json', 'tests.json', 'workflow.json'])
  })

  it('records every child in apply order with its workload and place, copied Secrets as SecretCopy without values', () => {
    const manifests = JSON.parse(data['manifests.json']!) as Array<{ workload: string; order: number; object: { kind: string; metadata?: { name: string } } }>
    expect(manifests.map((m) => [m.workload, m.order, m.object.kind])).toEqual([
      ['db', 0, 'Deployment'], ['web', 1, 'SecretCopy'], ['web', 1, 'Service'], ['web', 1, 'Deployment'],
    ])
    expect(manifests[1]!.object).toEqual({
      kind: 'SecretCopy', namespace: 'sandbox-recipes', name: 'recipes-demo-shop-web-0f1506de-env',
      sources: [{ namespace: 'recipes-demo', name: 'shop-db', key: 'password', env: 'PW', optional: false }],
    })
    expect(JSON.parse(data['tests.json']!).map((t: { test: string; object: { kind: string } }) => [t.test, t.object.kind])).toEqual([['smoke', 'Job']])
    expect(data['workflow.json']).toBe('null')
    expect(JSON.parse(data['resolved.json']!)).toEqual({
      profile: 'dev', inputs: { env: 'dev' }, computed: { mode: 'single' }, included: ['db', 'web'], excluded: ['cache'], order: ['db', 'web'],
    })
    expect(data.generation).toBe('3')
    expect(data['completed-jobs']).toBe('')
  })

  it('digest: SHA-256 of the content keys, the same for an unchanged render at any revision and generation', () => {
    expect(data.digest).toMatch(/^[0-9a-f]{64}$/)
    expect(s.digest).toBe(data.digest)
    const later = snapshot(recipeWith(recipe.spec, { generation: 8 }), result, config, 12)
    expect(later.ok && later.configMap.data.digest).toBe(data.digest)
    expect(renderDigest(recipe, renderOk([db, web], { ...result, inputs: { env: 'prod' } }), config)).not.toBe(data.digest)
  })

  it('is byte-identical for the same input', () => {
    const again = snapshot(recipe, result, config, 3)
    expect(JSON.stringify(again)).toBe(JSON.stringify(s))
  })

  it('completed-jobs: names appended once each', () => {
    const one = withCompletedJob(data, 'recipes-demo-shop-migrate-1a2b3c4d')
    const two = withCompletedJob({ 'completed-jobs': one }, 'recipes-demo-shop-other-00000000')
    expect(completedJobsOf({ 'completed-jobs': withCompletedJob({ 'completed-jobs': two }, 'recipes-demo-shop-other-00000000') }))
      .toEqual(['recipes-demo-shop-migrate-1a2b3c4d', 'recipes-demo-shop-other-00000000'])
  })
})

describe('RevisionTooLarge (spec §8.2)', () => {
  it('refuses a snapshot over 900 KiB with the size rounded up', () => {
    const big = Array.from({ length: 60 }, (_, i) => rendered({ name: `w${i}`, kind: 'Deployment', image: 'x', env: [{ name: 'BIG', value: 'x'.repeat(16000) }] }))
    const s = snapshot(recipe, renderOk(big), config, 1)
    expect(s.ok).toBe(false)
    if (s.ok) return
    expect(s.error.reason).toBe('RevisionTooLarge')
    expect(s.error.message).toBe(`the rendered revision is ${Math.ceil(s.sizeBytes / 1024)} KiB, more than 900 KiB`)
    expect(s.sizeBytes).toBeGreaterThan(900 * 1024)
  })

  it('accepts one just under the limit', () => {
    const s = snapshot(recipe, renderOk([rendered({ name: 'w', kind: 'Deployment', image: 'x', env: [{ name: 'A', value: 'x'.repeat(16000) }] })]), config, 1)
    expect(s.ok).toBe(true)
  })
})
