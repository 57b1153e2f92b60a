// spec §5.3 labels and annotations, and the manifest digest over the canonical manifest
// (keys sorted, without the digest annotation and the revision label).
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { canonicalJson, manifestDigest, withDigest } from '../../shared/recipe/plan/digest.js'
import { childLabels, selectorLabels, testJobLabels, testPodLabels, workloadObjectLabels, workloadPodLabels, workloadRelatedLabels } from '../../shared/recipe/plan/labels.js'
import { RECIPE } from './manifest-fixtures.js'

const common = {
  'app.kubernetes.io/managed-by': 'kinetic', 'purko.io/recipe': 'shop', 'purko.io/recipe-namespace': 'recipes-demo', 'purko.io/recipe-uid': RECIPE.uid,
}

describe('labels (spec §5.3)', () => {
  it.each([
    ['workload object', workloadObjectLabels(RECIPE, 'workload', 'web', 'recipes-demo-shop-web-0f1506de', 4), {
      ...common, 'app.kubernetes.io/part-of': 'shop', 'purko.io/component': 'workload', 'purko.io/revision': '4',
      'app.kubernetes.io/name': 'web', 'app.kubernetes.io/instance': 'recipes-demo-shop-web-0f1506de', 'purko.io/workload': 'web',
    }],
    ['Service', workloadObjectLabels(RECIPE, 'service', 'web', 'recipes-demo-shop-web-0f1506de', 4), {
      ...common, 'app.kubernetes.io/part-of': 'shop', 'purko.io/component': 'service', 'purko.io/revision': '4',
      'app.kubernetes.io/name': 'web', 'app.kubernetes.io/instance': 'recipes-demo-shop-web-0f1506de', 'purko.io/workload': 'web',
    }],
    ['MCPServer', workloadRelatedLabels(RECIPE, 'mcpserver', 'web', 4), {
      ...common, 'app.kubernetes.io/part-of': 'shop', 'purko.io/component': 'mcpserver', 'purko.io/revision': '4', 'purko.io/workload': 'web',
    }],
    ['pod template: no part-of, component or revision', workloadPodLabels(RECIPE, 'web', 'recipes-demo-shop-web-0f1506de'), {
      ...common, 'app.kubernetes.io/name': 'web', 'app.kubernetes.io/instance': 'recipes-demo-shop-web-0f1506de', 'purko.io/workload': 'web',
    }],
    ['test Job', testJobLabels(RECIPE, 'smoke', 4), {
      ...common, 'app.kubernetes.io/part-of': 'shop', 'purko.io/component': 'test', 'purko.io/revision': '4', 'purko.io/test': 'smoke',
    }],
    ['test pod template', testPodLabels(RECIPE, 'smoke'), { ...common, 'purko.io/test': 'smoke' }],
    ['revision ConfigMap', childLabels(RECIPE, 'revision', 4), {
      ...common, 'app.kubernetes.io/part-of': 'shop', 'purko.io/component': 'revision', 'purko.io/revision': '4',
    }],
    ['selector', selectorLabels('recipes-demo-shop-web-0f1506de'), { 'app.kubernetes.io/instance': 'recipes-demo-shop-web-0f1506de' }],
  ])('%s', (_label, actual, expected) => {
    expect(actual).toEqual(expected)
    expect(Object.keys(actual)).not.toContain('purko.io/workflow')
  })
})

describe('manifest digest (spec §5.3)', () => {
  const manifest = {
    apiVersion: 'v1', kind: 'Service',
    metadata: { name: 'x', namespace: 'n', labels: { b: '2', 'purko.io/revision': '4', a: '1' }, annotations: { other: 'y' } },
    spec: { z: 1, a: [{ y: 2, x: 1 }] },
  }

  it('is the first 16 hex of SHA-256 of the canonical JSON without the digest annotation and the revision label', () => {
    const canonical = '{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{"other":"y"},"labels":{"a":"1","b":"2"},"name":"x","namespace":"n"},"spec":{"a":[{"x":1,"y":2}],"z":1}}'
    expect(manifestDigest(manifest)).toBe(createHash('sha256').update(canonical).digest('hex').slice(0, 16))
  })

  it('ignores key order, the revision label and an existing digest annotation; sees any other change', () => {
    const d = manifestDigest(manifest)
    const reordered = { spec: { a: [{ x: 1, y: 2 }], z: 1 }, kind: 'Service', apiVersion: 'v1', metadata: { ...manifest.metadata, labels: { a: '1', b: '2', 'purko.io/revision': '9' } } }
    expect(manifestDigest(reordered)).toBe(d)
    expect(manifestDigest(withDigest(manifest))).toBe(d)
    expect(withDigest(manifest).metadata.annotations['purko.io/manifest-digest']).toBe(d)
    expect(manifestDigest({ ...manifest, spec: { z: 2, a: [{ y: 2, x: 1 }] } })).not.toBe(d)
    expect(manifestDigest({ ...manifest, spec: { z: 1, a: [{ y: 2, x: 1 }, {}] } })).not.toBe(d)
  })

  it('canonical JSON sorts keys at every level and keeps arrays in order', () => {
    expect(canonicalJson({ b: [3, { d: 1, c: undefined, a: null }], a: 'x' })).toBe('{"a":"x","b":[3,{"a":null,"d":1}]}')
  })
})
