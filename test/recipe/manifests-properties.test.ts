// Property (spec §1, §5.2): the same input always gives byte-identical manifests, and every
// child name stays within its limit and is a DNS-1123 label, for any recipe shape.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { buildManifests } from '../../shared/recipe/plan/manifests.js'
import { baseName, isDnsLabel } from '../../shared/recipe/plan/names.js'
import type { RenderedWorkload } from '../../shared/recipe/plan/rendered.js'
import { snapshot } from '../../shared/recipe/plan/snapshot.js'
import { WorkflowRecipeSchema, WorkloadSchema } from '../../shared/schemas/workflowrecipe.js'
import { renderedTest, renderOk } from './manifest-fixtures.js'

const label = (max: number, first = 'a-z0-9') => fc.stringMatching(new RegExp(`^[${first}]([-a-z0-9]{0,${max - 2}}[a-z0-9])?$`))
const kinds = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'] as const
const LIMITS: Record<string, number> = { StatefulSet: 52, CronJob: 52 }

const workloadArb = fc.record({
  name: label(32, 'a-z'),
  kind: fc.constantFrom(...kinds),
  image: fc.constantFrom('nginx:1.27', 'ghcr.io/x/y@sha256:' + 'a'.repeat(64)),
  env: fc.array(fc.record({ name: fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/), value: fc.string({ maxLength: 20 }) }), { maxLength: 3 }),
  secret: fc.boolean(),
  port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
  replicas: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined }),
  transport: fc.constantFrom(undefined, 'http', 'stdio'),
  claim: fc.boolean(),
})

describe('property: buildManifests is deterministic and names are valid', () => {
  it('same input → identical bytes; every name ≤ its limit and a DNS label', () => {
    fc.assert(fc.property(label(63), label(40, 'a-z'), fc.uniqueArray(workloadArb, { selector: (w) => w.name, maxLength: 5 }), fc.integer({ min: 1, max: 99999 }),
      (ns, name, specs, revision) => {
        const workloads: RenderedWorkload[] = specs.map((s) => {
          const kind = s.transport === 'stdio' ? 'Deployment' : s.transport === 'http' ? 'StatefulSet' : s.kind
          const ports = (s.port !== undefined || s.transport === 'http') && kind !== 'Job' && kind !== 'CronJob' && s.transport !== 'stdio'
            ? [{ name: 'p', port: s.port ?? 80 }] : undefined
          const { replicas: _none, ...w } = WorkloadSchema.parse({
            name: s.name, kind, image: s.image, env: s.env.filter((e, i, a) => a.findIndex((x) => x.name === e.name) === i),
            ...(s.secret ? { envSecret: [{ name: 'SECRET_VALUE', secretName: 'src', key: 'k' }] } : {}),
            ...(ports ? { ports } : {}),
            ...(kind === 'CronJob' ? { schedule: '0 3 * * *' } : {}),
            ...(s.transport ? { transport: s.transport } : {}),
            ...(kind === 'StatefulSet' && s.claim ? { volumeClaimTemplates: [{ name: 'data', storage: '1Gi', mountPath: '/data' }] } : {}),
          })
          const out: RenderedWorkload = { ...w, namespace: s.transport ? 'mcp-server' : 'sandbox-recipes', base: baseName(ns, name, s.name) }
          if (s.replicas !== undefined && (kind === 'Deployment' || kind === 'StatefulSet')) out.replicas = s.transport === 'stdio' ? Math.min(s.replicas, 10) : s.replicas
          return out
        })
        const recipe = WorkflowRecipeSchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name, namespace: ns, uid: 'u-1', generation: 1 }, spec: { workloads: [] } })
        const result = renderOk(workloads, { tests: [renderedTest({ name: 'smoke', image: 'curl', envSecret: [{ name: 'T', secretName: 's', key: 'k' }] })] })
        const config = recipeConfig({})
        const a = buildManifests(recipe, result, config, revision)
        const b = buildManifests(structuredClone(recipe), structuredClone(result), config, revision)
        expect(JSON.stringify(b)).toBe(JSON.stringify(a))
        expect(JSON.stringify(snapshot(recipe, result, config, revision))).toBe(JSON.stringify(snapshot(structuredClone(recipe), structuredClone(result), config, revision)))
        for (const c of a.children) {
          expect(isDnsLabel(c.name), `${c.kind} ${c.name}`).toBe(true)
          expect(c.name.length).toBeLessThanOrEqual(LIMITS[c.kind] ?? 63)
        }
      }), { numRuns: 150 })
  })
})
