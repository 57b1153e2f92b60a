/** A field-level reason inside a Status (details.causes[]). */
export interface StatusCause {
  reason: string
  message: string
  field: string
}

/** The optional details block of a Kubernetes Status. */
export interface StatusDetails {
  name?: string
  group?: string
  kind?: string
  uid?: string
  causes?: StatusCause[]
  retryAfterSeconds?: number
}

/** A Kubernetes `Status` object (kind Status, apiVersion v1). */
export interface Status {
  kind: 'Status'
  apiVersion: 'v1'
  metadata: Record<string, never>
  status: 'Failure' | 'Success'
  message?: string
  reason?: string
  details?: StatusDetails
  code: number
}

/** An API failure carrying the HTTP code and the Kubernetes `Status` the server answers with. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message)
    this.name = 'ApiError'
  }

  /** The Status body for this error, exactly as it goes on the wire. */
  toStatus(): Status {
    const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message, reason: this.reason, code: this.code }
    if (this.details) status.details = withoutEmpty(this.details)
    if (!this.reason) delete status.reason
    return status
  }
}

/** Status details as Go's `omitempty` writes them: empty names, groups and kinds are left out. */
export function withoutEmpty(details: StatusDetails): StatusDetails {
  const out: StatusDetails = {}
  for (const [k, v] of Object.entries(details) as [keyof StatusDetails, unknown][]) {
    if (v !== '' && v !== undefined) (out as Record<string, unknown>)[k] = v
  }
  return out
}

/** Names a resource the way Status messages do: `configmaps`, `workflows.purko.io`. */
export interface ResourceName {
  group: string
  plural: string
  kind: string
}

const qualified = (r: ResourceName): string => (r.group ? `${r.plural}.${r.group}` : r.plural)
const qualifiedKind = (r: ResourceName): string => (r.group ? `${r.kind}.${r.group}` : r.kind)

/** 404 NotFound: `workflows.purko.io "x" not found`. */
export function notFound(r: ResourceName, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualified(r)} "${name}" not found`, { name, group: r.group, kind: r.plural })
}

/** 409 AlreadyExists: `configmaps "x" already exists`. */
export function alreadyExists(r: ResourceName, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${qualified(r)} "${name}" already exists`, { name, group: r.group, kind: r.plural })
}

/** 409 Conflict on a stale resourceVersion, with the real server's wording. */
export function conflict(r: ResourceName, name: string): ApiError {
  return new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(r)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, group: r.group, kind: r.plural },
  )
}

/** Formats one cause the way field.Error.Error() does: `spec.x: Required value`. */
export function formatCause(c: StatusCause): string {
  return c.field ? `${c.field}: ${c.message}` : c.message
}

/** 422 Invalid: `Workflow.purko.io "x" is invalid: spec.steps[0].name: Required value`. */
export function invalid(r: ResourceName, name: string, causes: StatusCause[]): ApiError {
  // The message lists each distinct cause once (Go's aggregate error dedupes); details keep them all.
  const listed = [...new Set(causes.map(formatCause))]
  const summary = listed.length === 1 ? listed[0] : `[${listed.join(', ')}]`
  return new ApiError(422, 'Invalid', `${qualifiedKind(r)} "${name}" is invalid: ${summary}`, {
    name,
    group: r.group,
    kind: r.kind,
    causes,
  })
}

/** 400 BadRequest with a free-form message. */
export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message)
}

/** 405 MethodNotAllowed for a verb the resource does not support. */
export function methodNotAllowed(message = 'the server does not allow this method on the requested resource'): ApiError {
  return new ApiError(405, 'MethodNotAllowed', message)
}

/** 404 for a path that names no resource at all. */
export function noSuchResource(): ApiError {
  return new ApiError(404, 'NotFound', 'the server could not find the requested resource')
}

/** 413 for objects above the storage limit, worded like etcd's refusal. */
export function tooLarge(message = 'etcdserver: request is too large'): ApiError {
  return new ApiError(413, 'RequestEntityTooLarge', message)
}

/** 410 Expired for a watch resourceVersion older than the retained history; `floor` is the oldest version a watch may start from. */
export function expired(requested: number, floor: number): ApiError {
  return new ApiError(410, 'Expired', `too old resource version: ${requested} (${floor})`)
}

/** 403 Forbidden (for example, new content in a terminating namespace). */
export function forbidden(message: string): ApiError {
  return new ApiError(403, 'Forbidden', message)
}
