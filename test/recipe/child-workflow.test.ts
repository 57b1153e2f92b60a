// spec §5.10 the child Workflow: mapping table, per-step model override, content-hashed name.
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { canonicalJson } from '../../shared/recipe/plan/digest.js'
import { childWorkflowManifest } from '../../shared/recipe/plan/child-workflow.js'
import { RecipeStepSchema } from '../../shared/schemas/workflowrecipe.js'
import { WorkflowSchema } from '../../shared/schemas/workflow.js'
import { RECIPE } from './manifest-fixtures.js'

type Obj = Record<string, any>
const steps = [
  RecipeStepSchema.parse({ name: 'research', agent: 'researcher', task: 'Collect facts about Kinetic.', timeoutSeconds: 600 }),
  RecipeStepSchema.parse({
    name: 'draft', agent: 'writer', dependsOn: ['research'], inputFrom: [{ step: 'research', outputKey: 'response' }],
    task: 'Write for ${parameters.audience}', input: { style: 'short', task: 'ignored' }, condition: 'true',
    model: { name: 'claude-haiku-4-5', temperature: 0.3, maxTokens: 2048 }, retryPolicy: { maxRetries: 1, backoff: '30s' },
  }),
]
const settings = { parallelism: 2, failureStrategy: 'continueOnError' as const, timeout: '20m', parameters: { audience: 'platform teams' } }

describe('child Workflow (spec §5.10)', () => {
  const wf = childWorkflowManifest(RECIPE, 'Research a launch note.', settings, steps, 3) as Obj

  it('lives in the recipe namespace, owned by the recipe, component workflow', () => {
    expect(wf.apiVersion).toBe('purko.io/v1alpha1')
    expect(wf.kind).toBe('Workflow')
    expect(wf.metadata.namespace).toBe('recipes-demo')
    expect(wf.metadata.labels['purko.io/component']).toBe('workflow')
    expect(wf.metadata.ownerReferences).toEqual([{ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', name: 'shop', uid: RECIPE.uid, controller: true, blockOwnerDeletion: true }])
  })

  it('maps settings and steps as the table says; ${...} passes through; task wins over input.task', () => {
    expect(wf.spec).toEqual({
      description: 'Research a launch note.', parallelism: 2, failureStrategy: 'continueOnError', timeout: '20m',
      parameters: { audience: 'platform teams' },
      steps: [
        { name: 'research', agentRef: { name: 'researcher' }, timeout: { timeoutSeconds: 600 }, input: { task: 'Collect facts about Kinetic.' } },
        {
          name: 'draft', agentRef: { name: 'writer' }, dependsOn: ['research'], inputFrom: [{ step: 'research', outputKey: 'response' }],
          condition: 'true', retryPolicy: { maxRetries: 1, backoff: '30s' },
          input: { style: 'short', task: 'Write for ${parameters.audience}' },
          model: { name: 'claude-haiku-4-5', temperature: 0.3, maxTokens: 2048 },
        },
      ],
    })
  })

  it('is named shorten(<recipe>-wf-<h8>, 63) over the canonical spec: unchanged spec, same name at any revision', () => {
    const h8 = createHash('sha256').update(canonicalJson(wf.spec)).digest('hex').slice(0, 8)
    expect(wf.metadata.name).toBe(`shop-wf-${h8}`)
    expect((childWorkflowManifest(RECIPE, 'Research a launch note.', settings, steps, 9) as Obj).metadata.name).toBe(wf.metadata.name)
    expect((childWorkflowManifest(RECIPE, 'Other.', settings, steps, 3) as Obj).metadata.name).not.toBe(wf.metadata.name)
  })

  it('is a valid Workflow whose steps carry the model override in the Workflow step schema\'s own field', () => {
    const parsed = WorkflowSchema.parse(wf)
    expect(parsed.spec.steps.map((st) => st.model)).toEqual([undefined, { name: 'claude-haiku-4-5', temperature: 0.3, maxTokens: 2048 }])
    expect(() => WorkflowSchema.parse({ ...wf, spec: { ...wf.spec, steps: [{ ...wf.spec.steps[1], model: { temperature: 3 } }] } })).toThrow()
  })

  it('defaults parallelism 1, failFast, 30m', () => {
    const d = childWorkflowManifest(RECIPE, undefined, undefined, [steps[0]!], 1) as Obj
    expect([d.spec.parallelism, d.spec.failureStrategy, d.spec.timeout, d.spec.parameters]).toEqual([1, 'failFast', '30m', undefined])
  })
})
