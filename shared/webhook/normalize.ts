/**
 * purko's webhook source detection and payload normalisation (SPEC Appendix A): which sender a
 * payload comes from, and the few fields rules match on and step inputs describe.
 */

/** A decoded JSON object body. */
export type Payload = Record<string, unknown>

/** The fields purko extracts from a webhook payload; every one is a string, '' when absent. */
export interface Normalized {
  source: string
  title: string
  severity: string
  service: string
  action: string
  type: string
  repository: string
  user: string
  description: string
}

/** The separator purko joins the description parts with. */
export const DESCRIPTION_SEPARATOR = ' | '

/** Longest `X-Trigger-Source` value accepted (it becomes an annotation and a rule key). */
export const MAX_SOURCE_LENGTH = 63

/** Pure: whether a value is a JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/** A string field of an object ('' when absent or not a string, as Go's `.(string)` gives). */
function str(obj: unknown, key: string): string {
  if (!isObject(obj)) return ''
  const v = obj[key]
  return typeof v === 'string' ? v : ''
}

function has(obj: Payload, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key)
}

/**
 * Pure: the source of a payload: the `X-Trigger-Source` header when given (trimmed), else
 * `pagerduty` when the payload has `event`, `github` when it has `repository`, `slack` when it
 * has `command`, else `unknown`.
 */
export function detectSource(payload: Payload, header?: string): string {
  const explicit = header?.trim()
  if (explicit) return explicit
  if (has(payload, 'event')) return 'pagerduty'
  if (has(payload, 'repository')) return 'github'
  if (has(payload, 'command')) return 'slack'
  return 'unknown'
}

/** Pure: why an `X-Trigger-Source` header cannot be used, or null when it can (or is absent). */
export function invalidSourceHeader(header: string | undefined): string | null {
  if (header === undefined || header.trim() === '') return null
  const v = header.trim()
  if (v.length > MAX_SOURCE_LENGTH) return `X-Trigger-Source must be at most ${MAX_SOURCE_LENGTH} characters`
  // It is written into an annotation and compared against rules: printable ASCII only.
  if (!/^[\x21-\x7e]+(?: [\x21-\x7e]+)*$/.test(v)) return 'X-Trigger-Source must be printable ASCII'
  return null
}

/**
 * Pure: purko's normalisation of a payload for its source. The sender-specific readings apply
 * by the source name compared case-insensitively (purko compares exactly; a header `GitHub` is
 * read as a GitHub payload here); other sources read the flat fields.
 */
export function normalize(source: string, payload: Payload): Normalized {
  const n: Normalized = { source, title: '', severity: '', service: '', action: '', type: '', repository: '', user: '', description: '' }
  switch (source.toLowerCase()) {
    case 'pagerduty': {
      const event = payload.event
      const data = isObject(event) ? event.data : undefined
      n.title = str(data, 'title') || str(payload, 'title')
      n.severity = str(data, 'urgency') || str(payload, 'severity')
      n.service = (isObject(data) ? str(data.service, 'name') : '') || str(payload, 'service')
      n.type = str(event, 'event_type')
      n.action = n.type
      break
    }
    case 'github': {
      n.action = str(payload, 'action')
      n.repository = str(payload.repository, 'full_name')
      if (isObject(payload.pull_request)) {
        n.title = str(payload.pull_request, 'title')
        n.type = 'pull_request'
      } else if (isObject(payload.issue)) {
        n.title = str(payload.issue, 'title')
        n.type = 'issue'
      } else if (has(payload, 'push') || has(payload, 'ref')) {
        n.type = 'push'
      }
      break
    }
    case 'slack':
      n.action = str(payload, 'command')
      n.title = str(payload, 'text')
      n.user = str(payload, 'user_name')
      n.type = 'slash_command'
      break
    default:
      n.title = str(payload, 'title')
      n.severity = str(payload, 'severity')
      n.service = str(payload, 'service')
      n.action = str(payload, 'action')
      n.type = str(payload, 'type')
  }
  n.description = describe(n)
  return n
}

/** Pure: purko's description: the non-empty of title, `service: s`, `severity: s`, `repo: r`, `action: a`, joined by ` | `. */
export function describe(n: Omit<Normalized, 'description'>): string {
  return [
    n.title,
    n.service && `service: ${n.service}`,
    n.severity && `severity: ${n.severity}`,
    n.repository && `repo: ${n.repository}`,
    n.action && `action: ${n.action}`,
  ].filter((part) => part !== '').join(DESCRIPTION_SEPARATOR)
}
