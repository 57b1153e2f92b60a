/**
 * How an Agent's `spec.memory` reaches its step executor: purko's two paths, the `behavior`
 * field (off, session, persistent) and the legacy `type` field (buffer, summary, vector, none).
 */
import type { Agent } from '../../schemas/agent.js'
import type { PlainEnv } from '../../workflow/plan/step-input.js'

/** Pure: effective memory behavior; `session` without memory settings, `''` for the legacy `type` path. */
export function memoryBehavior(agent: Agent): string {
  const memory = agent.spec.memory
  if (!memory) return 'session'
  if (memory.behavior) return memory.behavior
  if (memory.type) return ''
  return 'session'
}

/** Pure: the `MEMORY_TYPE` the executor understands (none, buffer, summary, or the legacy type). */
export function memoryType(agent: Agent): string {
  switch (memoryBehavior(agent)) {
    case 'off': return 'none'
    case 'persistent': return 'summary'
    case '': return agent.spec.memory?.type || 'buffer'
    default: return 'buffer'
  }
}

/** Pure: `true` when the Agent uses the legacy vector store on a PVC (the `agent-memory` volume). */
export function usesLegacyVectorVolume(agent: Agent): boolean {
  const memory = agent.spec.memory
  return memoryBehavior(agent) === '' && memory?.type === 'vector' && memory.persistentStorage?.enabled === true
}

/**
 * Pure: MEMORY_TYPE, MEMORY_BEHAVIOR, AGENT_MEMORY (the recalled block, possibly empty, only for
 * persistent memory), MEMORY_CM_NAME (legacy summary) and MAX_CONTEXT_TOKENS, in purko's order.
 */
export function memoryEnv(agent: Agent, recalled?: string): PlainEnv[] {
  const memory = agent.spec.memory
  const behavior = memoryBehavior(agent)
  const env: PlainEnv[] = [{ name: 'MEMORY_TYPE', value: memoryType(agent) }]
  if (memory?.behavior) env.push({ name: 'MEMORY_BEHAVIOR', value: memory.behavior })
  if (behavior === 'persistent') env.push({ name: 'AGENT_MEMORY', value: recalled ?? '' })
  if (behavior === '' && memory?.type === 'summary') {
    env.push({ name: 'MEMORY_CM_NAME', value: `${agent.metadata.name ?? ''}-memory` })
  }
  if (memory?.maxContextTokens !== undefined) {
    env.push({ name: 'MAX_CONTEXT_TOKENS', value: String(memory.maxContextTokens) })
  }
  return env
}
