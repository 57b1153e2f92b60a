import type { V1Job } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { chooseJob, jobState, statusLogView, tailLines } from '../../shared/run-control/logs.js'
import { manualRun, manualRunSuffix } from '../../shared/run-control/runs.js'
import { RunControlError } from '../../shared/run-control/errors.js'
import { aWorkflow } from '../fixtures/workflows.js'

const job = (name: string, created: string, conditions: Array<{ type: string; status: string }> = []): V1Job => ({
  metadata: { name, creationTimestamp: new Date(created) }, status: { conditions },
})

describe('step logs', () => {
  it('shows the Job the step status names, else the newest', () => {
    const jobs = [job('wf-ship-a0', '2026-01-01T00:00:00Z'), job('wf-ship-a1', '2026-01-01T00:05:00Z')]
    expect(chooseJob(jobs, 'wf-ship-a0')?.metadata?.name).toBe('wf-ship-a0')
    expect(chooseJob(jobs, 'gone')?.metadata?.name).toBe('wf-ship-a1')
    expect(chooseJob(jobs, undefined)?.metadata?.name).toBe('wf-ship-a1')
    expect(chooseJob([], undefined)).toBeUndefined()
  })

  it.each([
    ['running', []],
    ['complete', [{ type: 'Complete', status: 'True' }]],
    ['failed', [{ type: 'Failed', status: 'True' }]],
    ['running', [{ type: 'Failed', status: 'False' }]],
  ] as const)('says %s from the Job conditions %j', (state, conditions) => {
    expect(jobState(job('j', '2026-01-01T00:00:00Z', [...conditions]))).toBe(state)
  })

  it('returns the last 100 lines, without an empty line for the trailing newline', () => {
    const log = Array.from({ length: 150 }, (_, i) => `line ${i}`).join('\n') + '\n'
    const lines = tailLines(log)
    expect(lines).toHaveLength(100)
    expect(lines[0]).toBe('line 50')
    expect(lines[99]).toBe('line 149')
    expect(tailLines('')).toEqual([])
    expect(tailLines('a\r\nb')).toEqual(['a', 'b'])
  })

  it("rebuilds a finished step's lines from its status when there is no Job or pod, as purko does", () => {
    expect(statusLogView('Failed', { name: 's', error: 'boom\nat line 2' }, 'no job')).toEqual({ lines: ['boom', 'at line 2'], status: 'failed' })
    expect(statusLogView('Succeeded', { name: 's', output: { answer: 42 } }, 'no pods')).toEqual({ lines: ['OUTPUT:{"answer":42}'], status: 'complete' })
    expect(statusLogView('Succeeded', { name: 's', output: {} }, 'no pods')).toEqual({ lines: [], status: 'complete' })
  })

  it('says "no job" or "no pods" for a step that has not finished', () => {
    expect(statusLogView(undefined, undefined, 'no job')).toEqual({ lines: [], status: 'no job' })
    expect(statusLogView('Pending', { name: 's', error: 'Waiting for human approval' }, 'no job')).toEqual({ lines: [], status: 'no job' })
    expect(statusLogView('Running', { name: 's' }, 'no pods')).toEqual({ lines: [], status: 'no pods' })
  })
})

describe('a manual run of a template', () => {
  const template = aWorkflow({ name: 'nightly', uid: 'tmpl-uid', annotations: { 'purko.io/template': 'true', owner: 'ops' }, spec: { parameters: { env: 'dev', region: 'eu' } } })

  it('is a manual run named after the template, started by the user, with the parameters merged', () => {
    const run = manualRun(template, 'alice', { env: 'prod' }, '0badcafe')
    expect(run.metadata).toMatchObject({
      name: 'nightly-run-0badcafe', namespace: 'ai-agents',
      annotations: { 'purko.io/workflow-template': 'nightly', 'purko.io/trigger-type': 'manual', 'purko.io/trigger-source': 'alice' },
      labels: { 'kinetic.dev/template': 'nightly' },
      ownerReferences: [{ kind: 'Workflow', name: 'nightly', uid: 'tmpl-uid', controller: true }],
    })
    expect(run.metadata.annotations).not.toHaveProperty('owner')
    expect(run.spec.parameters).toEqual({ env: 'prod', region: 'eu' })
  })

  it('derives the suffix from the Idempotency-Key (per user), else uses the random one', () => {
    const a = manualRunSuffix(template, 'alice', 'key-1', 'random00')
    expect(a).toMatch(/^[0-9a-f]{8}$/)
    expect(manualRunSuffix(template, 'alice', 'key-1', 'other000')).toBe(a)
    expect(manualRunSuffix(template, 'bob', 'key-1', 'random00')).not.toBe(a)
    expect(manualRunSuffix(template, 'alice', 'key-2', 'random00')).not.toBe(a)
    expect(manualRunSuffix(template, 'alice', undefined, 'random00')).toBe('random00')
  })

  it('is refused (400) for a Workflow that is not a template', () => {
    const plain = aWorkflow({ name: 'once' })
    expect(() => manualRun(plain, 'alice', {}, '00000000')).toThrow(RunControlError)
    try {
      manualRun(plain, 'alice', {}, '00000000')
    } catch (err) {
      expect((err as RunControlError).status).toBe(400)
    }
    // A scheduled Workflow is a template too (purko schedules it).
    const scheduled = aWorkflow({ name: 'weekly', spec: { trigger: { schedule: { cron: '0 9 * * 1' } } } as never })
    expect(manualRun(scheduled, 'alice', {}, '00000000').spec).not.toHaveProperty('trigger')
  })
})
