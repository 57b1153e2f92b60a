import type { V1Job } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { failureFromLog, jobFactFrom, MAX_OUTPUT_BYTES, resultFromLog } from '../../shared/workflow/plan/job-facts.js'

describe('resultFromLog', () => {
  it.each([
    ['a single OUTPUT line', 'thinking...\nOUTPUT:{"answer":42}\n', { answer: 42 }],
    ['the last OUTPUT line when there are several', 'OUTPUT:{"n":1}\nmore work\nOUTPUT:{"n":2}\ntrailing log', { n: 2 }],
    ['an OUTPUT line with surrounding spaces and a carriage return', 'OUTPUT:  {"ok":true}  \r\n', { ok: true }],
    ['no OUTPUT line as an empty object', 'just logs\nno result\n', {}],
    ['an empty log as an empty object', '', {}],
    ['a string output wrapped as {value}', 'OUTPUT:"done"', { value: 'done' }],
    ['an array output wrapped as {value}', 'OUTPUT:[1,2]', { value: [1, 2] }],
    ['a number output wrapped as {value}', 'OUTPUT:7', { value: 7 }],
    ['a null output wrapped as {value}', 'OUTPUT:null', { value: null }],
  ])('reads %s', (_, log, expected) => {
    const result = resultFromLog(log)
    expect(result.ok).toBe(true)
    if (result.ok) expect(JSON.parse(result.json)).toEqual(expected)
  })

  it('ignores OUTPUT: that does not start the line', () => {
    expect(resultFromLog('log: OUTPUT:{"x":1}')).toEqual({ ok: true, json: '{}' })
  })

  it('stores the output as compact JSON', () => {
    expect(resultFromLog('OUTPUT:{ "a" : [ 1, 2 ] }')).toEqual({ ok: true, json: '{"a":[1,2]}' })
  })

  it.each([
    ['an unparseable OUTPUT line', 'OUTPUT:{not json'],
    ['a truncated OUTPUT line', 'OUTPUT:{"a":'],
    ['an empty OUTPUT line', 'OUTPUT:'],
  ])('fails the step with InvalidOutput for %s', (_, log) => {
    expect(resultFromLog(log)).toEqual({ ok: false, class: 'output', error: 'InvalidOutput: the OUTPUT line is not valid JSON' })
  })

  it('accepts an output of exactly the limit', () => {
    const padding = 'x'.repeat(MAX_OUTPUT_BYTES - '{"p":""}'.length)
    expect(resultFromLog(`OUTPUT:{"p":"${padding}"}`).ok).toBe(true)
  })

  it.each([
    ['ASCII text', 'x'.repeat(MAX_OUTPUT_BYTES), MAX_OUTPUT_BYTES + 8],
    ['multi-byte text counted in UTF-8 bytes', 'é'.repeat(MAX_OUTPUT_BYTES / 2), MAX_OUTPUT_BYTES + 8],
  ])('fails an output over 256 KiB of %s with OutputTooLarge', (_, text, bytes) => {
    expect(resultFromLog(`OUTPUT:{"p":"${text}"}`)).toEqual({
      ok: false,
      class: 'output',
      error: `OutputTooLarge: step output is ${bytes} bytes; the limit is 262144 bytes`,
    })
  })
})

describe('failureFromLog', () => {
  it.each([
    ['the last five non-empty log lines', 'l1\nl2\nl3\n\nl4\nl5\nl6\nl7\n', undefined, 'l3\nl4\nl5\nl6\nl7'],
    ['all lines of a short log', 'boom\n', undefined, 'boom'],
    ['the error the executor put on its OUTPUT line', 'l1\nOUTPUT:{"error":"provider returned 401"}\nl3', undefined, 'provider returned 401'],
    ['log lines when the OUTPUT line has no error', 'l1\nOUTPUT:{"answer":1}', undefined, 'l1\nOUTPUT:{"answer":1}'],
    ['the Job reason when the log is empty', '', 'BackoffLimitExceeded', 'job failed: BackoffLimitExceeded'],
    ['a plain message when the log is empty and there is no reason', '', undefined, 'job failed'],
  ])('reports %s', (_, log, reason, error) => {
    expect(failureFromLog(log, reason, undefined)).toEqual({ ok: false, class: 'error', error })
  })

  it.each([
    [600, 'Step exceeded its timeout of 600s (DeadlineExceeded)'],
    [undefined, 'Step exceeded its timeout (DeadlineExceeded)'],
  ])('reports DeadlineExceeded (deadline %s) as a timeout', (deadline, error) => {
    expect(failureFromLog('ignored log', 'DeadlineExceeded', deadline)).toEqual({ ok: false, class: 'timeout', error })
  })

  it('reports a Job without pods', () => {
    expect(failureFromLog(null, 'BackoffLimitExceeded', undefined))
      .toEqual({ ok: false, class: 'error', error: 'job failed (no pods found): BackoffLimitExceeded' })
  })

  it('keeps the tokens and cost the executor reports beside its error, since a failed attempt spent them too', () => {
    const log = 'OUTPUT:{"error":"tool loop","_metrics":{"tokens_in":40,"tokens_out":2,"cost_usd":0.03}}'
    expect(failureFromLog(log, undefined, undefined)).toEqual({ ok: false, class: 'error', error: 'tool loop', usage: { tokens: 42, costUSD: 0.03 } })
  })

  it('keeps a long failure text to 1024 characters', () => {
    const result = failureFromLog('y'.repeat(5000), undefined, undefined)
    expect(result.ok).toBe(false)
    if (!result.ok) {
      expect(result.error).toHaveLength(1024)
      expect(result.error.endsWith('...')).toBe(true)
    }
  })
})

function aJob(labels: Record<string, string>, conditions: { type: string; status: string; reason?: string }[] = [], deadline?: number): V1Job {
  return {
    metadata: { name: 'wf-s1-3f2a9c1e-ab12', namespace: 'ai-agents', labels },
    spec: { template: {}, ...(deadline === undefined ? {} : { activeDeadlineSeconds: deadline }) },
    status: { conditions: conditions.map((c) => ({ ...c, lastTransitionTime: undefined })) as never },
  }
}

const LABELS = { 'purko.io/workflow': 'wf', 'purko.io/step': 's1', 'kinetic.dev/run-id': '3f2a9c1e-ab12', 'kinetic.dev/attempt': '2' }

describe('jobFactFrom', () => {
  it('names the Workflow from its owner reference when the label had to be shortened', () => {
    const long = `nightly-${'report-'.repeat(12)}run`
    const job = aJob({ ...LABELS, 'purko.io/workflow': 'nightly-report-report-report-9f86d081884c' })
    job.metadata!.ownerReferences = [{ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: long, uid: 'u', controller: true }]
    expect(jobFactFrom(job)?.workflow).toBe(long)
  })

  it.each<[string, V1Job, object | null]>([
    ['a running Job', aJob(LABELS), { state: 'Active', attempt: 2 }],
    ['a complete Job', aJob(LABELS, [{ type: 'Complete', status: 'True' }]), { state: 'Succeeded' }],
    ['a Job whose success criteria are met', aJob(LABELS, [{ type: 'SuccessCriteriaMet', status: 'True' }]), { state: 'Succeeded' }],
    ['a Job past its deadline', aJob(LABELS, [{ type: 'Failed', status: 'True', reason: 'DeadlineExceeded' }], 60),
      { state: 'Failed', failureReason: 'DeadlineExceeded', deadlineSeconds: 60 }],
    ['a compensation Job', aJob({ ...LABELS, 'kinetic.dev/attempt': 'rollback' }), { attempt: 'rollback' }],
    ['a Job without an attempt label as attempt 0', aJob({ ...LABELS, 'kinetic.dev/attempt': undefined } as never), { attempt: 0 }],
    ['a Job without a run id as not ours', aJob({ 'purko.io/workflow': 'wf', 'purko.io/step': 's1' }), null],
    ['a Job with a garbled attempt as not ours', aJob({ ...LABELS, 'kinetic.dev/attempt': 'x' }), null],
  ])('reads %s', (_, job, expected) => {
    const fact = jobFactFrom(job)
    if (expected === null) expect(fact).toBeNull()
    else expect(fact).toMatchObject({ name: 'wf-s1-3f2a9c1e-ab12', workflow: 'wf', step: 's1', runId: '3f2a9c1e-ab12', ...expected })
  })
})

describe('jobFactFrom times', () => {
  it('reads when the Job started and finished, from Date objects (the client) or strings (events)', () => {
    const job = aJob(LABELS, [{ type: 'Complete', status: 'True' }])
    job.status = { ...job.status, startTime: new Date('2026-01-01T00:00:05Z'), completionTime: '2026-01-01T00:01:00Z' as unknown as Date }
    expect(jobFactFrom(job)).toMatchObject({ startedAt: '2026-01-01T00:00:05.000Z', finishedAt: '2026-01-01T00:01:00.000Z' })
  })

  it('takes a failed Job\'s end from its Failed condition, and a Job never started from its creation', () => {
    const job = aJob(LABELS, [{ type: 'Failed', status: 'True', reason: 'DeadlineExceeded' }])
    job.status!.conditions![0]!.lastTransitionTime = '2026-01-01T00:02:00Z' as unknown as Date
    job.metadata!.creationTimestamp = '2026-01-01T00:00:00Z' as unknown as Date
    expect(jobFactFrom(job)).toMatchObject({ startedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:02:00.000Z' })
  })

  it('has no end while the Job runs', () => {
    const job = aJob(LABELS)
    job.status = { startTime: new Date('2026-01-01T00:00:05Z'), completionTime: new Date('2026-01-01T00:00:06Z') }
    expect(jobFactFrom(job)?.finishedAt).toBeUndefined()
  })
})
