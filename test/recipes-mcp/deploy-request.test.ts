// deploy-recipe's arguments → the recipe to write (spec §14.3), without a server.
import { describe, expect, it } from 'vitest'
import {
  deploySourceOf, desiredRecipe, instantiateTemplate, parseManifest, phaseAfterDeploy, recipeToWrite, RESERVED_ANNOTATIONS,
} from '../../shared/recipes-mcp/deploy-request.js'
import { DeployRecipeInput } from '../../shared/recipes-mcp/tool-inputs.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'

const NS = 'team-a'
const SPEC = { values: { a: 1, b: 'x' }, profile: 'small', profiles: [{ name: 'small' }, { name: 'big' }], workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1' }] }
const args = (extra: Record<string, unknown>) => DeployRecipeInput.parse({ namespace: NS, name: 'shop', ...extra })
const stored = (annotations: Record<string, string>, extra: Partial<WorkflowRecipe['metadata']> = {}, status?: WorkflowRecipe['status']): WorkflowRecipe =>
  WorkflowRecipeSchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name: 'shop', namespace: NS, annotations, ...extra }, spec: SPEC, ...(status ? { status } : {}) })

describe('deploySourceOf', () => {
  it('takes exactly one source; a template defaults to the call namespace', () => {
    expect(deploySourceOf(args({ template: { name: 't' } }))).toEqual({ kind: 'template', namespace: NS, name: 't' })
    expect(deploySourceOf(args({ template: { name: 't', namespace: 'lib' } }))).toEqual({ kind: 'template', namespace: 'lib', name: 't' })
    expect(deploySourceOf(args({ spec: SPEC }))).toEqual({ kind: 'body', body: { spec: SPEC } })
    expect(() => deploySourceOf(args({}))).toThrow(expect.objectContaining({ code: 'InvalidArguments' }))
    expect(() => deploySourceOf(args({ spec: SPEC, manifest: 'x' }))).toThrow('not spec and manifest')
    expect(() => deploySourceOf(args({ spec: SPEC, labels: { 'purko.io/x': '1', ok: '2' } }))).toThrow('purko.io/x')
  })
})

describe('parseManifest', () => {
  const doc = (meta: Record<string, unknown>) => JSON.stringify({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: meta, spec: SPEC, status: { phase: 'Active' } })
  it('keeps labels, annotations and spec, never the status', () => {
    expect(parseManifest(doc({ name: 'shop', labels: { a: 'b' }, annotations: { c: 'd' } }), NS, 'shop')).toEqual({ spec: SPEC, labels: { a: 'b' }, annotations: { c: 'd' } })
    expect(parseManifest(`# comment\n---\n${doc({})}\n---\n`, NS, 'shop')).toEqual({ spec: SPEC })
  })
  it('refuses every reserved annotation', () => {
    expect(RESERVED_ANNOTATIONS).toEqual(['purko.io/approve', 'purko.io/reject', 'purko.io/approved-by', 'purko.io/retry', 'purko.io/rollback', 'purko.io/orphan', 'purko.io/deployed-by', 'purko.io/deployed-via'])
    for (const a of RESERVED_ANNOTATIONS) expect(() => parseManifest(doc({ annotations: { [a]: '3' } }), NS, 'shop')).toThrow(`reserved annotations: ${a}`)
    // The template mark is not reserved: a manifest may define a template.
    expect(parseManifest(doc({ annotations: { 'purko.io/template': 'true' } }), NS, 'shop').annotations).toEqual({ 'purko.io/template': 'true' })
  })
  it('refuses non-string label values, a missing spec, a YAML alias bomb and more than 512 KiB', () => {
    expect(() => parseManifest(doc({ labels: { a: 1 } }), NS, 'shop')).toThrow('metadata.labels must map strings to strings')
    expect(() => parseManifest('apiVersion: purko.io/v1alpha1\nkind: WorkflowRecipe\n', NS, 'shop')).toThrow('no spec object')
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]', ...Array.from({ length: 8 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}]`)].join('\n')
    expect(() => parseManifest(bomb, NS, 'shop')).toThrow(expect.objectContaining({ code: 'InvalidArguments', message: expect.stringContaining('not valid YAML') }))
    expect(() => parseManifest(doc({}) + ' '.repeat(512 * 1024), NS, 'shop')).toThrow(/more than the 524288 allowed/)
  })
})

describe('instantiateTemplate', () => {
  it("copies the template's spec and names it in purko.io/recipe-template, without its own annotations", () => {
    const t = stored({ 'purko.io/template': 'true', 'example.com/owner': 'x' }, { name: 'web-template', labels: { kind: 'template' } })
    expect(instantiateTemplate(t)).toEqual({ spec: t.spec, annotations: { 'purko.io/recipe-template': `${NS}/web-template` } })
  })
  it('refuses a recipe that is not a template, and a deprecated one (annotation or phase)', () => {
    expect(() => instantiateTemplate(stored({}))).toThrow(expect.objectContaining({ code: 'NotATemplate' }))
    expect(() => instantiateTemplate(stored({ 'purko.io/template': 'yes' }))).toThrow(expect.objectContaining({ code: 'NotATemplate' }))
    expect(() => instantiateTemplate(stored({ 'purko.io/template': 'true', 'purko.io/deprecate': 'true' }))).toThrow(expect.objectContaining({ code: 'TemplateDeprecated' }))
    expect(() => instantiateTemplate(stored({ 'purko.io/template': 'true' }, {}, { phase: 'Deprecated' }))).toThrow(expect.objectContaining({ code: 'TemplateDeprecated' }))
  })
})

describe('desiredRecipe and recipeToWrite', () => {
  it('replaces the profile, merges values over the spec values, adds labels and the ownership marks', () => {
    const desired = desiredRecipe(args({ profile: 'big', values: { b: 'y', c: true }, labels: { team: 'a' } }), { spec: SPEC, labels: { app: 'shop' }, annotations: { note: 'n' } }, 'system:serviceaccount:ai:agent')
    expect(desired).toEqual({
      apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
      metadata: {
        name: 'shop', namespace: NS, labels: { app: 'shop', team: 'a' },
        annotations: { note: 'n', 'purko.io/deployed-by': 'system:serviceaccount:ai:agent', 'purko.io/deployed-via': 'mcp' },
      },
      spec: { ...SPEC, profile: 'big', values: { a: 1, b: 'y', c: true } },
    })
    expect(SPEC.values).toEqual({ a: 1, b: 'x' })
  })

  it('creates when absent; replaces an MCP-deployed recipe keeping its metadata; refuses any other', () => {
    const desired = desiredRecipe(args({ labels: { team: 'a' } }), { spec: { workloads: [] } }, 'bob')
    expect(recipeToWrite(desired, null)).toBe(desired)
    const live = stored({ 'purko.io/deployed-via': 'mcp', 'purko.io/deployed-by': 'alice', 'purko.io/recipe-template': 'lib/t', 'purko.io/approve': '1' },
      { uid: 'u1', resourceVersion: '42', generation: 3, labels: { app: 'shop' }, finalizers: ['purko.io/recipe-finalizer'] }, { phase: 'Active' })
    const next = recipeToWrite(desired, live)
    expect(next.metadata).toEqual({
      name: 'shop', namespace: NS, uid: 'u1', resourceVersion: '42', generation: 3, finalizers: ['purko.io/recipe-finalizer'],
      labels: { app: 'shop', team: 'a' },
      annotations: { 'purko.io/deployed-via': 'mcp', 'purko.io/deployed-by': 'bob', 'purko.io/approve': '1' },
    })
    expect(next.spec).toEqual({ workloads: [] })
    expect(next).not.toHaveProperty('status')
    const deleting = stored({ 'purko.io/deployed-via': 'mcp' }, { deletionTimestamp: '2026-03-01T10:00:00Z' })
    expect(() => recipeToWrite(desired, deleting)).toThrow(expect.objectContaining({ code: 'Conflict', message: expect.stringContaining('is being deleted') }))
    for (const foreign of [stored({}), stored({ 'purko.io/deployed-via': 'kubectl' })]) {
      expect(() => recipeToWrite(desired, foreign)).toThrow(expect.objectContaining({ code: 'NotManagedByMcp' }))
    }
  })

  it('phaseAfterDeploy: Candidate for a new recipe or generation, the same phase for an unchanged spec, Deprecated stays', () => {
    const live = stored({}, { generation: 2 }, { phase: 'Active' })
    expect(phaseAfterDeploy(null, live)).toBe('Candidate')
    expect(phaseAfterDeploy(live, { ...live, metadata: { ...live.metadata, generation: 3 } })).toBe('Candidate')
    expect(phaseAfterDeploy(live, live)).toBe('Active')
    const deprecated = stored({}, { generation: 2 }, { phase: 'Deprecated' })
    expect(phaseAfterDeploy(deprecated, { ...deprecated, metadata: { ...deprecated.metadata, generation: 3 } })).toBe('Deprecated')
  })
})
