import type { ExecutorConfig } from './config.js'

/**
 * Agent memory as the controller hands it over (purko's memory integration): recalled text arrives in
 * AGENT_MEMORY (behavior `persistent`, MEMORY_TYPE `summary`) or as files on the legacy vector
 * volume; what to remember leaves in `_memory_update` for the controller to store.
 */

const TASK_CHARS = 200
const RESULT_CHARS = 500

/** Whether this run reads recalled memory and emits `_memory_update`, as purko's executor decides. */
export function remembers(memory: ExecutorConfig['memory']): boolean {
  if (memory.behavior !== undefined) return memory.behavior === 'persistent'
  return memory.type === 'summary'
}

/** Pure: at most `n` code points of the text, never splitting a character. */
export function truncateChars(text: string, n: number): string {
  const chars = Array.from(text)
  return chars.length <= n ? text : chars.slice(0, n).join('')
}

/**
 * Pure: the block appended to the first user message, or '' when there is nothing to recall.
 * `vectorEntries` are the legacy volume's files, newest first; both sources are cut to
 * MAX_CONTEXT_TOKENS x 4 characters.
 */
export function memoryContext(memory: ExecutorConfig['memory'], vectorEntries: readonly string[] = []): string {
  const budget = memory.maxContextTokens * 4
  let recalled = ''
  if (remembers(memory)) recalled = memory.agentMemory.trim()
  else if (memory.behavior === undefined && memory.type === 'vector') {
    const kept: string[] = []
    let used = 0
    for (const entry of vectorEntries) {
      if (used + entry.length > budget && kept.length > 0) break
      kept.push(entry)
      used += entry.length + 5
    }
    recalled = kept.join('\n---\n')
  }
  if (recalled === '') return ''
  return `\n\n[Previous execution context]\n${truncateChars(recalled, budget)}\n\n[Current task follows]`
}

/** Pure: the task text for the memory summary: input.task, input.raw or input.description, else STEP_INPUT itself. */
export function taskText(input: unknown, inputText: string): string {
  if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const o = input as Record<string, unknown>
    const v = [o.task, o.raw, o.description].find((x) => typeof x === 'string' && x.trim() !== '')
    if (typeof v === 'string') return v
  }
  return inputText
}

/** Pure: `Task: <task> | Result: <result>` (200 and 500 characters at most), or undefined when this run does not remember. */
export function memoryUpdate(cfg: Pick<ExecutorConfig, 'memory' | 'input' | 'inputText'>, result: string): string | undefined {
  if (!remembers(cfg.memory)) return undefined
  const task = truncateChars(taskText(cfg.input, cfg.inputText).replace(/\s+/g, ' ').trim(), TASK_CHARS)
  return `Task: ${task} | Result: ${truncateChars(result.trim(), RESULT_CHARS)}`
}
