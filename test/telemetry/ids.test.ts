import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { parseTraceparent, runSpanId, runTraceId, stepSpanId, stepTraceparent } from '../../shared/telemetry/ids.js'

describe('trace identity', () => {
  it('derives the same ids for the same run on any instance, and other ids for a rerun', () => {
    expect(runTraceId('a1b2c3d4-1')).toBe(runTraceId('a1b2c3d4-1'))
    expect(runTraceId('a1b2c3d4-1')).toMatch(/^[0-9a-f]{32}$/)
    expect(runSpanId('a1b2c3d4-1')).toMatch(/^[0-9a-f]{16}$/)
    expect(runTraceId('a1b2c3d4-2')).not.toBe(runTraceId('a1b2c3d4-1'))
  })

  it('gives a step Job the traceparent it had before tracing existed (digests of the run id and the Job name), so logs keyed on it still match', () => {
    const sha = (t: string) => createHash('sha256').update(t).digest('hex')
    expect(stepTraceparent('run-1', 'wf-plan-run-1')).toBe(`00-${sha('run-1').slice(0, 32)}-${sha('wf-plan-run-1').slice(0, 16)}-01`)
    expect(stepTraceparent('run-1', 'wf-plan-run-1')).toBe(`00-${runTraceId('run-1')}-${stepSpanId('wf-plan-run-1')}-01`)
  })

  it.each([
    ['garbage'],
    ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331'],
    ['ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
    ['00-00000000000000000000000000000000-b7ad6b7169203331-01'],
    ['00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01'],
    ['00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01'],
  ])('reads %s as no trace context (a new trace starts)', (value) => {
    expect(parseTraceparent(value)).toBeNull()
  })

  it('reads a valid traceparent', () => {
    expect(parseTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toEqual({
      traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', sampled: true,
    })
  })
})
