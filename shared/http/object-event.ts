import { z } from 'zod'

/**
 * Data of an ApiServerSource event about one object: the whole object (Resource mode) or an
 * ObjectReference (Reference mode). `kind` only names it in the refusal message.
 */
export function objectEventData(kind: string) {
  return z.looseObject({
    kind: z.string().optional(),
    name: z.string().optional(),
    namespace: z.string().optional(),
    metadata: z.looseObject({ name: z.string().min(1), namespace: z.string().min(1) }).optional(),
  }).refine((d) => d.metadata !== undefined || (d.name && d.namespace), `neither ${/^[AEIOU]/.test(kind) ? 'an' : 'a'} ${kind} nor an ObjectReference`)
}

/** Pure: namespace and name of the object an event is about, in either mode. */
export function objectKeyOf(data: z.output<ReturnType<typeof objectEventData>>): { namespace: string; name: string } {
  return { namespace: data.metadata?.namespace ?? data.namespace!, name: data.metadata?.name ?? data.name! }
}
