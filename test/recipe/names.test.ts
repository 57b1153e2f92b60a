// spec §5.2: shorten with the SHA-256 suffix, the `r` prefix, base(w) at 52 and every child name;
// with Kinetic's identity suffix, so recipes of different namespaces never share a name (issue 27).
import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  baseName, childWorkflowName, envSecretName, isDnsLabel, jobWorkloadName, mcpServerName, mcpTokenSecretName,
  revisionConfigMapName, serviceName, shorten, testEnvSecretName, testJobName,
} from '../../shared/recipe/plan/names.js'

const sha8 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8)

describe('shorten (spec §5.2)', () => {
  it.each([
    ['fits', 'recipes-demo-postgres-db', 52, 'recipes-demo-postgres-db'],
    ['exactly the limit', 'a'.repeat(52), 52, 'a'.repeat(52)],
    ['does not start with a letter', '1team-shop-web', 52, 'r1team-shop-web'],
    ['starts with a dash-free digit run', '42', 63, 'r42'],
  ])('%s: %s', (_label, name, limit, expected) => {
    expect(shorten(name, limit)).toBe(expected)
  })

  it('cuts to limit - 9 characters and appends - and the first 8 hex of SHA-256 of the full name', () => {
    const name = `${'a'.repeat(50)}-web`
    expect(shorten(name, 52)).toBe(`${'a'.repeat(43)}-${sha8(name)}`)
    expect(shorten(name, 52)).toHaveLength(52)
  })

  it('removes trailing dashes of the cut before the suffix', () => {
    const name = `${'a'.repeat(41)}--${'b'.repeat(20)}`
    expect(shorten(name, 52)).toBe(`${'a'.repeat(41)}-${sha8(name)}`)
  })
})

describe('names of every child (spec §5.2)', () => {
  const base = baseName('recipes-demo', 'shop', 'web')
  it.each([
    ['base(w)', base, 'recipes-demo-shop-web-0f1506de'],
    ['Service', serviceName(base), 'recipes-demo-shop-web-0f1506de'],
    ['MCPServer', mcpServerName(baseName('recipes-demo', 'mcp-everything', 'everything')), 'recipes-demo-mcp-everything-everything-a3013afa'],
    ['copied env Secret', envSecretName(base), 'recipes-demo-shop-web-0f1506de-env'],
    ['copied MCP token Secret', mcpTokenSecretName(base), 'recipes-demo-shop-web-0f1506de-mcp-token'],
    ['Job workload', jobWorkloadName(base, '{"x":1}'), `recipes-demo-shop-web-0f1506de-${sha8('{"x":1}')}`],
    ['test Job', testJobName('recipes-demo', 'shop', 'smoke', 4), 'recipes-demo-shop-test-smoke-2460e744-r4'],
    ['test env Secret', testEnvSecretName('recipes-demo', 'shop', 'smoke'), 'recipes-demo-shop-test-smoke-2460e744-env'],
    ['child Workflow', childWorkflowName('shop', '{"steps":[]}'), `shop-wf-${sha8('{"steps":[]}')}`],
    ['revision ConfigMap', revisionConfigMapName('shop', 7), 'shop-rev-7'],
  ])('%s', (_label, actual, expected) => {
    expect(actual).toBe(expected)
  })

  it('base(w) is the joined name shortened to 43, then its identity: SHA-256 of <ns>/<recipe>/<workload>; 52 at most', () => {
    expect(baseName('team', 'shop', 'web')).toBe(`team-shop-web-${sha8('team/shop/web')}`)
    const ns = 'n'.repeat(63)
    const b = baseName(ns, 'r'.repeat(40), 'w'.repeat(32))
    expect(b).toHaveLength(52)
    expect(b).toBe(`${'n'.repeat(34)}-${sha8(`${ns}-${'r'.repeat(40)}-${'w'.repeat(32)}`)}-${sha8(`${ns}/${'r'.repeat(40)}/${'w'.repeat(32)}`)}`)
    expect(mcpTokenSecretName(b)).toHaveLength(62)
    expect(jobWorkloadName(b, 'spec')).toHaveLength(61)
    expect(testJobName(ns, 'r'.repeat(40), 't'.repeat(32), 12345)).toHaveLength(63)
  })
})

describe('names are collision-free across recipes of different namespaces', () => {
  it('recipe a-web in namespace team and recipe web in team-a (the same joined text) get different names for every child', () => {
    expect(baseName('team', 'a-web', 'db')).not.toBe(baseName('team-a', 'web', 'db'))
    expect(baseName('team', 'a', 'web-db')).not.toBe(baseName('team', 'a-web', 'db'))
    expect(testJobName('team', 'a-web', 'smoke', 1)).not.toBe(testJobName('team-a', 'web', 'smoke', 1))
    expect(testEnvSecretName('team', 'a-web', 'smoke')).not.toBe(testEnvSecretName('team-a', 'web', 'smoke'))
    // A test named like a workload is not that workload.
    expect(testEnvSecretName('team', 'shop', 'web')).not.toBe(envSecretName(baseName('team', 'shop', 'test-web')))
  })

  it('property: any two different (namespace, recipe, workload) whose joined text is the same get different names', () => {
    fc.assert(fc.property(label(20, 'a-z'), label(20, 'a-z'), label(20, 'a-z'), label(20, 'a-z'), (a, b, c, d) => {
      // (a, b-c, d) and (a-b, c, d) read the same joined by dashes.
      expect(baseName(a, `${b}-${c}`, d)).not.toBe(baseName(`${a}-${b}`, c, d))
      expect(testJobName(a, `${b}-${c}`, d, 1)).not.toBe(testJobName(`${a}-${b}`, c, d, 1))
    }), { numRuns: 300 })
  })
})

const label = (max: number, first = 'a-z0-9') => fc.stringMatching(new RegExp(`^[${first}]([-a-z0-9]{0,${max - 2}}[a-z0-9])?$`))

describe('property: names are deterministic, within their limits and DNS-valid', () => {
  it('holds for any namespace, recipe, workload and test name', () => {
    fc.assert(fc.property(label(63), label(40, 'a-z'), label(32, 'a-z'), label(32), fc.integer({ min: 1, max: 1_000_000 }), fc.string(),
      (ns, recipe, workload, test, revision, spec) => {
        const b = baseName(ns, recipe, workload)
        expect(b).toBe(baseName(ns, recipe, workload))
        expect(b.length).toBeLessThanOrEqual(52)
        for (const name of [b, serviceName(b), envSecretName(b), mcpTokenSecretName(b), jobWorkloadName(b, spec),
          testJobName(ns, recipe, test, revision), testEnvSecretName(ns, recipe, test), childWorkflowName(recipe, spec),
          revisionConfigMapName(recipe, revision)]) {
          expect(isDnsLabel(name), name).toBe(true)
          expect(/^[a-z]/.test(name), name).toBe(true)
        }
      }), { numRuns: 300 })
  })
})
