// renderRecipe (spec §1 steps 1-5) over every example of reference/recipes/examples: each
// renders, with the spec's workload order, included and excluded sets, and byte-identical
// output on a second run; plus the pipeline's error collection across stages.
import { baseName } from '../../shared/recipe/plan/names.js'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { renderRecipe, specErrorsMessage } from '../../shared/recipe/plan/render.js'
import type { RenderOk } from '../../shared/recipe/plan/rendered.js'
import { referenceDir } from '../support/reference.js'

const root = join(referenceDir(), 'recipes', 'examples')
const examples = readdirSync(root).filter((f) => f.endsWith('.yaml')).sort()
  .flatMap((file) => parseAllDocuments(readFileSync(join(root, file), 'utf8')).map((d) => d.toJS() as { kind?: string }))
  .filter((doc) => doc?.kind === 'WorkflowRecipe')
  .map((doc) => WorkflowRecipeSchema.parse(doc))
const config = recipeConfig({})

function byName(name: string): WorkflowRecipe {
  const found = examples.find((r) => r.metadata.name === name)
  if (!found) throw new Error(`no example ${name}`)
  return structuredClone(found)
}

function ok(recipe: WorkflowRecipe): RenderOk {
  const result = renderRecipe(recipe, config)
  if (!result.ok) throw new Error(specErrorsMessage(result.errors))
  return result
}

const EXPECTED: Record<string, { order: string[]; excluded: string[] }> = {
  'postgres': { order: ['db'], excluded: [] },
  'mongodb': { order: ['mongo'], excluded: [] },
  'mcp-everything': { order: ['everything'], excluded: [] },
  'mcp-time': { order: ['time'], excluded: [] },
  'nightly-report': { order: ['report'], excluded: [] },
  'node-otel-agent': { order: ['collector'], excluded: [] },
  'shop': { order: ['db', 'migrate', 'web'], excluded: ['cache'] },
  'launch-research': { order: [], excluded: [] },
  'postgres-template': { order: ['db'], excluded: [] },
}

describe('renderRecipe over the reference examples', () => {
  it('finds every example recipe', () => {
    expect(examples.map((r) => r.metadata.name).sort()).toEqual(Object.keys(EXPECTED).sort())
  })

  it.each(examples.map((r) => [r.metadata.name!, r] as const))('%s renders with the expected order and exclusions, identically twice', (name, recipe) => {
    const first = ok(structuredClone(recipe))
    expect(first.order).toEqual(EXPECTED[name]!.order)
    expect(first.workloads.map((w) => w.name)).toEqual(EXPECTED[name]!.order)
    expect(first.excluded).toEqual(EXPECTED[name]!.excluded)
    expect(JSON.stringify(renderRecipe(structuredClone(recipe), config))).toBe(JSON.stringify(first))
    for (const w of first.workloads) {
      if (name !== 'postgres-template') expect(JSON.stringify(w)).not.toContain('{{')
      expect(w.base).toBe(baseName('recipes-demo', name, w.name))
    }
  })

  it('a template lists its missing required input and leaves the placeholders needing it unrendered (spec §7.7)', () => {
    const r = ok(byName('postgres-template'))
    expect(r.missingInputs).toEqual(['database'])
    expect(JSON.stringify(r.workloads[0])).toContain('{{inputs.database}}')
    const instance = byName('postgres-template')
    delete instance.metadata.annotations
    const failed = renderRecipe(instance, config)
    expect(!failed.ok && failed.errors[0]!.message).toBe('input "database" has no value: give it a default, a profile value or a value in spec.values')
  })

  it('shop (dev): inputs, computed values and the wired placeholders', () => {
    const r = ok(byName('shop'))
    expect(r.profile).toBe('dev')
    expect(r.inputs).toEqual({ env: 'dev', replicas: 1, dbName: 'shop', storage: '1Gi', cacheEnabled: false, logLevel: 'debug', webTag: '1.27-alpine' })
    expect(r.computed).toEqual({ mode: 'single', dbPoolSize: 10, siteTitle: 'Shop (DEV)' })
    const web = r.workloads.find((w) => w.name === 'web')!
    expect(web.image).toBe('nginxinc/nginx-unprivileged:1.27-alpine')
    expect(web.replicas).toBe(1)
    expect(web.namespace).toBe('sandbox-recipes')
    expect(web.base).toBe('recipes-demo-shop-web-0f1506de')
    expect(Object.fromEntries(web.env!.map((e) => [e.name, e.value]))).toMatchObject({
      DATABASE_URL: 'postgres://shop@recipes-demo-shop-db-ea96027d.sandbox-recipes.svc:5432/shop?pool=10',
      CACHE_HOST: '',
      MODE: 'single',
      SITE_TITLE: 'Shop (DEV)',
      LOG_LEVEL: 'debug',
    })
    const db = r.workloads.find((w) => w.name === 'db')!
    expect(db.volumeClaimTemplates![0]!.storage).toBe('1Gi')
    expect(r.tests[0]!.args).toContain('http://recipes-demo-shop-web-0f1506de.sandbox-recipes.svc:80/')
    expect(r.tests[0]!.namespace).toBe('sandbox-recipes')
  })

  it('shop (prod): the cache is included and ordered before web; the fallback gives way to the real host', () => {
    const recipe = byName('shop')
    recipe.spec.profile = 'prod'
    const r = ok(recipe)
    expect(r.order).toEqual(['db', 'cache', 'migrate', 'web'])
    expect(r.excluded).toEqual([])
    const web = r.workloads.find((w) => w.name === 'web')!
    expect(web.replicas).toBe(3)
    expect(web.env!.find((e) => e.name === 'CACHE_HOST')!.value).toBe('recipes-demo-shop-cache-7bc66e93.sandbox-recipes.svc')
    expect(r.computed).toEqual({ mode: 'ha', dbPoolSize: 30, siteTitle: 'Shop (PROD)' })
  })

  it('places transport workloads in the MCP namespace and substitutes {namespace}', () => {
    const recipe = byName('mcp-everything')
    const r = renderRecipe(recipe, recipeConfig({ KINETIC_RECIPES_MCP_NAMESPACE: 'mcp-{namespace}', KINETIC_RECIPES_SANDBOX_NAMESPACE: '{namespace}' }))
    expect(r.ok && r.workloads[0]!.namespace).toBe('mcp-recipes-demo')
    const shop = renderRecipe(byName('shop'), recipeConfig({ KINETIC_RECIPES_SANDBOX_NAMESPACE: '{namespace}' }))
    expect(shop.ok && shop.workloads.map((w) => w.namespace)).toEqual(['recipes-demo', 'recipes-demo', 'recipes-demo'])
  })

  it('renders steps and workflow parameters for the agentic example', () => {
    const r = ok(byName('launch-research'))
    expect(r.steps!.map((s) => s.name)).toEqual(['research', 'draft', 'review'])
    expect(JSON.stringify(r.steps)).not.toContain('{{')
    expect(r.workflow).toBeDefined()
  })

  it('collects errors of every stage in pipeline order and joins them per spec §8.2', () => {
    const recipe = byName('shop')
    recipe.spec.values = { nope: 1, replicas: '3' }
    recipe.spec.computed = [...recipe.spec.computed!, { name: 'bad', expression: '1/0' }]
    recipe.spec.workloads!.find((w) => w.name === 'db')!.dependsOn = ['web']
    recipe.spec.workloads!.find((w) => w.name === 'web')!.image = 'nginx:{{inputs.webTga}}'
    const r = renderRecipe(recipe, config)
    expect(r.ok).toBe(false)
    if (r.ok) return
    expect(r.errors.map((e) => e.reason)).toEqual(['UnknownInput', 'InputTypeMismatch', 'ComputedValueError', 'DependencyCycle', 'TemplateUnresolved'])
    expect(r.errors.map((e) => e.message)).toEqual([
      'spec.values sets unknown input "nope"',
      'input "replicas" must be an integer, got string "3"',
      'computed "bad": division by zero',
      'dependency cycle: db -> web -> migrate -> db',
      'workload "web": image: unresolved reference "inputs.webTga": no input "webTga"',
    ])
  })

  it('spec §8.2 message: at most 10 errors, then "; and <n> more"', () => {
    const errors = Array.from({ length: 12 }, (_, i) => ({ reason: 'X', message: `e${i}` }))
    expect(specErrorsMessage(errors)).toBe('e0; e1; e2; e3; e4; e5; e6; e7; e8; e9; and 2 more')
    expect(specErrorsMessage(errors.slice(0, 2))).toBe('e0; e1')
  })

  it('DuplicateEnvName and VolumeMountConflict', () => {
    const recipe = byName('shop')
    const db = recipe.spec.workloads!.find((w) => w.name === 'db')!
    db.env!.push({ name: 'POSTGRES_PASSWORD', value: 'x' })
    db.volumeClaimTemplates![0]!.mountPath = '/elsewhere'
    const r = renderRecipe(recipe, config)
    expect(!r.ok && r.errors.map((e) => e.message)).toEqual([
      'workload "db": environment variable "POSTGRES_PASSWORD" is set by both env and envSecret',
      'workload "db": volume "data" and volumeClaimTemplate "data" have different mountPaths',
    ])
  })
})
