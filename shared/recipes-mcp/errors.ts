/**
 * Tool results and the error codes of spec §14.4. A tool error is a result with
 * `isError: true`, the message as text, and `structuredContent: {error: {code, message, details?}}`;
 * arguments that violate the input schema are a JSON-RPC -32602 error instead (tools.ts). Pure.
 */
import { ConflictError, RefusedError, TransientError } from '../core/errors.js'

export type ToolErrorCode =
  | 'InvalidArguments' | 'Forbidden' | 'NotFound' | 'NotATemplate' | 'TemplateDeprecated'
  | 'NotManagedByMcp' | 'Conflict' | 'Invalid' | 'Unavailable' | 'Internal'

/** A failed tool call as the caller sees it. */
export class ToolError extends Error {
  constructor(readonly code: ToolErrorCode, message: string, readonly details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ToolError'
  }
}

/** What a tool call answers (the MCP CallToolResult shape). */
export interface ToolResult {
  [key: string]: unknown
  content: { type: 'text'; text: string }[]
  structuredContent: Record<string, unknown>
  isError?: boolean
}

/** Pure: a successful result: `structuredContent` and one text item holding the same JSON. */
export function toolResult(structured: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured }
}

/** Pure: an error result (spec §14.4). */
export function errorResult(err: ToolError): ToolResult {
  const error = { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) }
  return { content: [{ type: 'text', text: err.message }], structuredContent: { error }, isError: true }
}

/**
 * Pure: any failure as a tool error. Ours pass through; the port's errors map to their codes
 * (a 422 keeps the API server's causes); anything else is Internal, with no detail that could
 * carry something the caller should not see (the shell logs it with the request id).
 */
export function toolErrorOf(err: unknown, requestId: string): ToolError {
  if (err instanceof ToolError) return err
  if (err instanceof RefusedError) {
    if (err.code === 422) return new ToolError('Invalid', err.message, { causes: err.causes }, { cause: err })
    return new ToolError('Invalid', err.message, undefined, { cause: err })
  }
  if (err instanceof ConflictError) return new ToolError('Conflict', `${err.message} (changed twice while this call ran; try again)`, undefined, { cause: err })
  if (err instanceof TransientError) return new ToolError('Unavailable', 'The Kubernetes API is unavailable; try again later', undefined, { cause: err })
  return new ToolError('Internal', `Internal error (request ${requestId})`, undefined, { cause: err })
}

/** Pure: a denied SubjectAccessReview (spec §14.4 `Forbidden`, details = the attributes). */
export function forbidden(user: string, attributes: { verb: string; group: string; resource: string; namespace?: string; name?: string }): ToolError {
  const what = `${attributes.resource}${attributes.group ? `.${attributes.group}` : ''}`
  const where = attributes.namespace ? ` in namespace ${attributes.namespace}` : ' cluster-wide'
  const message = `${user} may not ${attributes.verb} ${what}${attributes.name ? ` ${attributes.name}` : ''}${where}`
  return new ToolError('Forbidden', message, {
    verb: attributes.verb, group: attributes.group, resource: attributes.resource,
    namespace: attributes.namespace ?? null, name: attributes.name ?? null,
  })
}
