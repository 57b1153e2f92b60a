import { describe, expect, it } from 'vitest'
import {
  ANNOTATION_MEMORY_UPDATES, appendMemory, MEMORY_SUMMARY_MAX_BYTES, memoryUpdateFrom, recallFrom, truncateUtf8,
} from '../../shared/memory/plan/agent-memory.js'
import { anAgent } from '../fixtures/workflows.js'

const withMemory = (memory: Record<string, unknown>) => ({ ...anAgent(), spec: { ...anAgent().spec, memory } }) as ReturnType<typeof anAgent>
const persistent = withMemory({ behavior: 'persistent', maxContextTokens: 4 })
const session = anAgent()
const off = withMemory({ behavior: 'off' })

describe('memoryUpdateFrom', () => {
  it.each([
    ['the update as written', session, { _memory_update: 'Task: x | Result: y' }, 'Task: x | Result: y'],
    ['the update without its [workflow/step] prefix', session, { _memory_update: '[wf/s1] learned z' }, 'learned z'],
    ['nothing without the key', session, { response: 'r' }, null],
    ['nothing for an empty update outside persistent memory', session, { _memory_update: '', response: 'r' }, null],
    ['an automatic summary for an empty update with persistent memory', persistent, { _memory_update: '', response: 'found OOM' }, 'Task: s1 | Result: found OOM'],
    ['nothing when memory is off', off, { _memory_update: 'x' }, null],
  ])('gives %s', (_, agent, output, expected) => {
    expect(memoryUpdateFrom(agent, JSON.stringify(output), 'wf', 's1')).toBe(expected)
  })
})

describe('appendMemory', () => {
  it('creates the summary, appends with a separator, and never appends the same update twice', () => {
    const first = appendMemory(null, 'scout', 'team', 'one', 'run/a')!
    expect(first.metadata?.name).toBe('scout-memory')
    expect(first.metadata?.labels).toMatchObject({ 'purko.io/agent': 'scout', 'purko.io/memory-type': 'summary' })
    const second = appendMemory(first, 'scout', 'team', 'two', 'run/b')!
    expect(second.data?.summary).toBe('one\n---\ntwo')
    expect(second.metadata?.annotations?.[ANNOTATION_MEMORY_UPDATES]).toBe('run/a,run/b')
    expect(appendMemory(second, 'scout', 'team', 'two', 'run/b')).toBeNull()
  })

  it('keeps only the newest 8 KiB, never splitting a character', () => {
    const big = appendMemory(null, 'scout', 'team', 'é'.repeat(6000), 'run/a')!
    const next = appendMemory(big, 'scout', 'team', 'tail', 'run/b')!
    const summary = next.data!.summary!
    expect(new TextEncoder().encode(summary).length).toBeLessThanOrEqual(MEMORY_SUMMARY_MAX_BYTES)
    expect(summary.endsWith('\n---\ntail')).toBe(true)
    expect(summary).not.toContain('\uFFFD')
  })
})

describe('recallFrom', () => {
  it('gives a persistent Agent the newest part of its summary within its token budget', () => {
    const configMap = { data: { summary: 'old old old|newest!' } }
    expect(recallFrom(persistent, configMap)).toBe(' old old|newest!') // 4 tokens = 16 characters
    expect(recallFrom(persistent, null)).toBe('')
  })

  it('truncates UTF-8 text without splitting a character', () => {
    expect(truncateUtf8('日本語', 4)).toBe('日')
    expect(truncateUtf8('hello', 10)).toBe('hello')
  })
})
