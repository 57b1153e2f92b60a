import { HTTP, type CloudEvent } from 'cloudevents'
import type { Context } from 'hono'
import type { z } from 'zod'
import { BadEventError } from '../core/errors.js'

/** The CloudEvent attributes a handler reads, with the data already validated. */
export interface ReceivedEvent<T> {
  id: string
  type: string
  source: string
  subject: string | undefined
  /** The event's `time` attribute (a PingSource's send time), when it has one. */
  time: string | undefined
  extensions: Record<string, unknown>
  data: T
}

/**
 * Decodes a binary or structured CloudEvent and validates its data with `schema`.
 * BadEventError (400, no redelivery) for anything malformed.
 */
export async function readCloudEvent<S extends z.ZodType>(c: Context, schema: S): Promise<ReceivedEvent<z.output<S>>> {
  const headers: Record<string, string> = {}
  // fetch Headers are lowercase, which the SDK needs to find ce-* extensions.
  c.req.raw.headers.forEach((value, key) => { headers[key] = value })
  const body = await c.req.text()
  return parseCloudEvent(headers, body, schema)
}

/** Pure form of readCloudEvent for callers that already hold headers and body. */
export function parseCloudEvent<S extends z.ZodType>(headers: Record<string, string>, body: string, schema: S): ReceivedEvent<z.output<S>> {
  let event: CloudEvent<unknown>
  try {
    const parsed = HTTP.toEvent({ headers, body })
    if (Array.isArray(parsed)) throw new BadEventError('Batched CloudEvents are not accepted')
    event = parsed as CloudEvent<unknown>
    event.validate()
  } catch (err) {
    if (err instanceof BadEventError) throw err
    throw new BadEventError(`Malformed CloudEvent: ${describe(err)}`, { cause: err })
  }
  const data = typeof event.data === 'string' && event.data.length > 0 ? tryJson(event.data) : event.data
  const result = schema.safeParse(data ?? {})
  if (!result.success) {
    const issue = result.error.issues[0]
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : ''
    throw new BadEventError(`Invalid data in CloudEvent ${event.id} (${event.type})${where}: ${issue?.message ?? 'invalid'}`)
  }
  const { id, type, source, subject, specversion: _sv, time, datacontenttype: _dct, dataschema: _ds, data: _d, data_base64: _db, ...rest } = event as unknown as Record<string, unknown>
  return { id: String(id), type: String(type), source: String(source), subject: subject as string | undefined, time: time === undefined ? undefined : String(time), extensions: rest, data: result.data }
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function describe(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  const errors = err && typeof err === 'object' && 'errors' in err ? (err as { errors: unknown }).errors : undefined
  // The SDK's ValidationError carries ajv details in `errors`; an empty list adds nothing.
  return Array.isArray(errors) && errors.length > 0 ? `${message} ${JSON.stringify(errors)}` : message
}
