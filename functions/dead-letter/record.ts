import type { ReceivedEvent } from '../../shared/http/cloudevent.js'

/** Event data up to this many bytes of JSON is logged whole; larger data is only measured. */
export const MAX_LOGGED_DATA_BYTES = 4096

/** The log fields for one dead-lettered event. */
export interface DeadLetterRecord {
  ceId: string
  ceType: string
  ceSource: string
  ceSubject: string | undefined
  /** The subscriber URL that finally failed (Knative's `knativeerrordest`). */
  errorDest: string | undefined
  /** The subscriber's last HTTP status (`knativeerrorcode`); undefined for network errors. */
  errorCode: number | undefined
  /** The subscriber's last response body (`knativeerrordata`, base64-decoded). */
  errorData: string | undefined
  /** Every other extension, e.g. kind, name, namespace, kineticsource, knativearrivaltime. */
  extensions: Record<string, unknown>
  dataBytes: number
  /** The event data when it is small enough to log whole, otherwise absent. */
  data?: unknown
}

/**
 * Pure: turns a dead-lettered event into log fields, decoding Knative's knativeerror*
 * extensions and keeping the data only up to MAX_LOGGED_DATA_BYTES.
 */
export function deadLetterRecord(event: ReceivedEvent<unknown>): DeadLetterRecord {
  const { knativeerrordest, knativeerrorcode, knativeerrordata, ...extensions } = event.extensions
  const json = event.data === undefined ? '' : JSON.stringify(event.data) ?? ''
  const dataBytes = Buffer.byteLength(json)
  const record: DeadLetterRecord = {
    ceId: event.id,
    ceType: event.type,
    ceSource: event.source,
    ceSubject: event.subject,
    errorDest: knativeerrordest === undefined ? undefined : String(knativeerrordest),
    errorCode: errorCodeOf(knativeerrorcode),
    errorData: typeof knativeerrordata === 'string' ? Buffer.from(knativeerrordata, 'base64').toString('utf8') : undefined,
    extensions,
    dataBytes,
  }
  if (dataBytes <= MAX_LOGGED_DATA_BYTES) record.data = event.data
  return record
}

function errorCodeOf(value: unknown): number | undefined {
  if (value === undefined || value === '') return undefined
  const code = Number(value)
  return Number.isInteger(code) ? code : undefined
}
