// `{{workloads.<job>.name}}` for a Job workload (spec §4.2, §5.2): the name of the Job object
// that buildManifests creates, `base(w)-<h8>` over the canonical rendered Job spec, and not
// `base(w)`. Jobs may carry each other's names when the references are acyclic; a Job that
// references its own name, or Jobs that reference each other's names, are TemplateUnresolved.
import { describe, expect, it } from 'vitest'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { buildManifests } from '../../shared/recipe/plan/manifests.js'
import { renderRecipe, specErrorsMessage } from '../../shared/recipe/plan/render.js'
import type { RenderOk } from '../../shared/recipe/plan/rendered.js'

const config = recipeConfig({})

type W = Record<string, unknown>
function recipe(workloads: W[], extra: Record<string, unknown> = {}): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1',
    kind: 'WorkflowRecipe',
    metadata: { name: 'app', namespace: 'team', uid: '00000000-0000-4000-8000-000000000002' },
    spec: { workloads, ...extra },
  })
}

function ok(r: WorkflowRecipe): RenderOk {
  const result = renderRecipe(r, config)
  if (!result.ok) throw new Error(specErrorsMessage(result.errors))
  return result
}

function errorsOf(r: WorkflowRecipe): string[] {
  const result = renderRecipe(r, config)
  if (result.ok) throw new Error('expected the render to fail')
  return result.errors.map((e) => `${e.reason}: ${e.message}`)
}

const envOf = (rendered: RenderOk, workload: string, name: string): string | undefined =>
  rendered.workloads.find((w) => w.name === workload)!.env?.find((e) => e.name === name)?.value

/** Object names as buildManifests gives them, by workload. */
function objectNames(r: WorkflowRecipe, rendered: RenderOk): Record<string, string> {
  return Object.fromEntries(buildManifests(r, rendered, config, 1).workloads.map((w) => [w.name, w.objectName]))
}

const job = (name: string, env: W[] = [], more: W = {}): W => ({ name, kind: 'Job', image: 'busybox:1.36', env, ...more })
const deployment = (name: string, env: W[] = []): W => ({ name, kind: 'Deployment', image: 'nginx:1.27', env })

describe('workloads.<job>.name', () => {
  it('is the Job object\'s content-hashed name base(w)-<h8>, for a Deployment, a test, a step and a workflow parameter', () => {
    const r = recipe([job('migrate'), deployment('web', [{ name: 'MIGRATION', value: 'job/{{workloads.migrate.name}}' }])], {
      tests: [{ name: 'smoke', image: 'busybox:1.36', env: [{ name: 'JOB', value: '{{workloads.migrate.name}}' }] }],
      steps: [{ name: 'check', agent: 'checker', task: 'Inspect {{workloads.migrate.name}}' }],
      workflow: { parameters: { job: '{{workloads.migrate.name}}' } },
    })
    const rendered = ok(r)
    const names = objectNames(r, rendered)
    // base(w) (with its identity suffix), then the hash of the Job's spec.
    expect(names.migrate).toMatch(/^team-app-migrate-[0-9a-f]{8}-[0-9a-f]{8}$/)
    expect(envOf(rendered, 'web', 'MIGRATION')).toBe(`job/${names.migrate}`)
    expect(rendered.tests[0]!.env![0]!.value).toBe(names.migrate)
    expect(rendered.steps![0]!.task).toBe(`Inspect ${names.migrate}`)
    expect(rendered.workflow!.parameters!.job).toBe(names.migrate)
    // Every other kind keeps base(w); the workload's base stays base(w) for a Job too.
    expect(names.web).toBe('team-app-web-2a12ac8c')
    expect(rendered.workloads.find((w) => w.name === 'migrate')!.base).toBe('team-app-migrate-51afe7a7')
  })

  it('follows the Job\'s content: a changed Job spec gives a new name everywhere it is referenced', () => {
    const make = (image: string) => recipe([job('migrate', [], { image }), deployment('web', [{ name: 'J', value: '{{workloads.migrate.name}}' }])])
    const a = ok(make('busybox:1.36'))
    const b = ok(make('busybox:1.37'))
    expect(envOf(a, 'web', 'J')).not.toBe(envOf(b, 'web', 'J'))
    expect(envOf(b, 'web', 'J')).toBe(objectNames(make('busybox:1.37'), b).migrate)
  })

  it('a Job may carry another Job\'s name (declared after it, too): dependencies are rendered first', () => {
    const r = recipe([
      job('report', [{ name: 'AFTER', value: '{{workloads.migrate.name}}' }]),
      job('migrate', [{ name: 'SEED', value: '{{workloads.seed.name}}' }]),
      job('seed'),
    ])
    const rendered = ok(r)
    const names = objectNames(r, rendered)
    expect(envOf(rendered, 'report', 'AFTER')).toBe(names.migrate)
    expect(envOf(rendered, 'migrate', 'SEED')).toBe(names.seed)
    // Spec order of the result is unchanged (no dependsOn: declaration order).
    expect(rendered.order).toEqual(['report', 'migrate', 'seed'])
  })

  it('a Job that references its own name is TemplateUnresolved', () => {
    expect(errorsOf(recipe([job('migrate', [{ name: 'SELF', value: '{{workloads.migrate.name}}' }])]))).toEqual([
      'TemplateUnresolved: workload "migrate": env[SELF]: unresolved reference "workloads.migrate.name": Job workload "migrate" references its own name (a Job\'s name hashes its rendered spec)',
    ])
  })

  it('Jobs that reference each other\'s names are TemplateUnresolved with the cycle, seen from each; a Job behind the cycle is not reported again', () => {
    const r = recipe([
      job('a', [{ name: 'B', value: '{{workloads.b.name}}' }]),
      job('b', [{ name: 'C', value: '{{workloads.c.name}}' }]),
      job('c', [{ name: 'A', value: '{{workloads.a.name}}' }]),
      job('d', [{ name: 'A', value: '{{workloads.a.name}}' }]),
      job('e', [{ name: 'D', value: '{{workloads.d.name}}' }]),
      deployment('web', [{ name: 'E', value: '{{workloads.e.name}}' }, { name: 'B', value: '{{workloads.b.name}}' }]),
    ])
    const why = (cycle: string) => `Job workload names depend on each other: ${cycle} (a Job's name hashes its rendered spec)`
    expect(errorsOf(r)).toEqual([
      `TemplateUnresolved: workload "a": env[B]: unresolved reference "workloads.b.name": ${why('a -> b -> c -> a')}`,
      `TemplateUnresolved: workload "b": env[C]: unresolved reference "workloads.c.name": ${why('b -> c -> a -> b')}`,
      `TemplateUnresolved: workload "c": env[A]: unresolved reference "workloads.a.name": ${why('c -> a -> b -> c')}`,
      `TemplateUnresolved: workload "d": env[A]: unresolved reference "workloads.a.name": ${why('a -> b -> c -> a')}`,
      `TemplateUnresolved: workload "web": env[B]: unresolved reference "workloads.b.name": ${why('b -> c -> a -> b')}`,
    ])
  })

  it('a test referencing a Job on a cycle gets the cycle as the Job\'s own', () => {
    const r = recipe([
      job('a', [{ name: 'B', value: '{{workloads.b.name}}' }]),
      job('b', [{ name: 'A', value: '{{workloads.a.name}}' }]),
    ], { tests: [{ name: 't', image: 'busybox:1.36', args: ['{{workloads.b.name}}'] }] })
    expect(errorsOf(r).at(-1)).toBe(
      'TemplateUnresolved: test "t": args[0]: unresolved reference "workloads.b.name": Job workload names depend on each other: b -> a -> b (a Job\'s name hashes its rendered spec)',
    )
  })

  it('a Job whose own render fails gives no second error where its name is referenced', () => {
    const r = recipe([job('migrate', [{ name: 'X', value: '{{inputs.nope}}' }]), deployment('web', [{ name: 'J', value: '{{workloads.migrate.name}}' }])])
    expect(errorsOf(r)).toEqual(['TemplateUnresolved: workload "migrate": env[X]: unresolved reference "inputs.nope": no input "nope"'])
  })

  it('a Job may reference its own namespace: only the name is a hash of its spec', () => {
    const r = recipe([job('migrate', [{ name: 'NS', value: '{{workloads.migrate.namespace}}' }])])
    expect(envOf(ok(r), 'migrate', 'NS')).toBe(ok(r).workloads[0]!.namespace)
  })
})
