// Golden manifests (spec §5) for every example recipe of reference/recipes/examples: each is
// parsed by the schema, rendered (spec §1 steps 1-5) and built (step 6, revision 1), and the YAML of
// every child in deploy order, plus the revision snapshot's digest, must equal the committed
// file test/recipe/golden/<example>--<recipe>.yaml byte for byte.
//
// After an intended change to the manifests, regenerate the files and review the diff:
//   UPDATE_GOLDEN=1 npx vitest run test/recipe/golden.test.ts
//
// The template example (09) has a required input without a default; it is instantiated the way
// its header shows `deploy-recipe` doing it (profile large, values {database: orders}).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments, stringify } from 'yaml'
import { WorkflowRecipeSchema } from '../../shared/schemas/workflowrecipe.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { renderRecipe } from '../../shared/recipe/plan/render.js'
import { buildManifests } from '../../shared/recipe/plan/manifests.js'
import { snapshot } from '../../shared/recipe/plan/snapshot.js'
import { referenceDir } from '../support/reference.js'

const goldenDir = join(dirname(fileURLToPath(import.meta.url)), 'golden')
const examplesDir = join(referenceDir(), 'recipes', 'examples')
const update = process.env.UPDATE_GOLDEN === '1'
const config = recipeConfig({})
const UID = '00000000-0000-4000-8000-000000000001'

const recipes = readdirSync(examplesDir).filter((f) => f.endsWith('.yaml')).sort().flatMap((file) =>
  parseAllDocuments(readFileSync(join(examplesDir, file), 'utf8')).map((d) => d.toJS() as Record<string, any> | null)
    .filter((doc): doc is Record<string, any> => doc?.kind === 'WorkflowRecipe')
    .map((doc) => ({ file, doc })))

function instantiate(doc: Record<string, any>): Record<string, any> {
  const meta = { ...doc.metadata, uid: UID, generation: 1 }
  if (doc.metadata?.annotations?.['purko.io/template'] === 'true') {
    const { annotations: _a, ...rest } = meta
    return { ...doc, metadata: rest, spec: { ...doc.spec, profile: 'large', values: { database: 'orders' } } }
  }
  return { ...doc, metadata: meta }
}

function goldenText(doc: Record<string, any>): string {
  const recipe = WorkflowRecipeSchema.parse(instantiate(doc))
  const result = renderRecipe(recipe, config)
  if (!result.ok) throw new Error(`render failed: ${JSON.stringify(result.errors)}`)
  const objects = buildManifests(recipe, result, config, 1)
  const snap = snapshot(recipe, result, config, 1)
  if (!snap.ok) throw new Error(snap.error.message)
  const header = `# Golden manifests of ${recipe.metadata.namespace}/${recipe.metadata.name}, revision 1 (generated; see test/recipe/golden.test.ts)\n`
    + `# snapshot digest: ${snap.digest}\n`
  return header + objects.children.map((c) => stringify(c.manifest, { lineWidth: 0 })).join('---\n')
}

describe('golden manifests of every example', () => {
  it('finds the example recipes', () => {
    expect(recipes.length).toBeGreaterThanOrEqual(9)
  })

  it.each(recipes.map((r) => [`${r.file.replace(/\.yaml$/, '')}--${r.doc.metadata.name}`, r.doc] as const))('%s', (name, doc) => {
    const text = goldenText(doc)
    const path = join(goldenDir, `${name}.yaml`)
    if (update) writeFileSync(path, text)
    expect(existsSync(path), `${path} is missing: run with UPDATE_GOLDEN=1`).toBe(true)
    expect(text).toBe(readFileSync(path, 'utf8'))
    expect(goldenText(structuredClone(doc))).toBe(text)
  })
})
