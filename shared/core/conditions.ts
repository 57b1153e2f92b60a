import type { Condition } from '../schemas/workflow.js'

/**
 * Pure: `conditions` with one condition set the way meta.SetStatusCondition does it: replaced in
 * place by type, lastTransitionTime kept unless the status changes.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: { type: string; status: Condition['status']; reason?: string; message?: string; observedGeneration?: number },
  now: string,
): Condition[] {
  const list = [...(conditions ?? [])]
  const i = list.findIndex((c) => c.type === next.type)
  const previous = i >= 0 ? list[i] : undefined
  const lastTransitionTime = previous && previous.status === next.status ? previous.lastTransitionTime : now
  const condition: Condition = { ...next, lastTransitionTime }
  if (i >= 0) list[i] = condition
  else list.push(condition)
  return list
}
