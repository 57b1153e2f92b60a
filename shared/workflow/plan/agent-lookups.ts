import type { Agent } from '../../schemas/agent.js'

/**
 * Pure: the Agents as given, noting in `looked` each key the planner looks up (`get` or `has`),
 * so a caller learns which Agents a plan rested on.
 */
export function recordingLookups(agents: Map<string, Agent>, looked: Set<string>): Map<string, Agent> {
  return new Proxy(agents, {
    get(target, prop) {
      if (prop === 'get' || prop === 'has') {
        return (key: string) => {
          looked.add(key)
          return prop === 'get' ? target.get(key) : target.has(key)
        }
      }
      const value = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
