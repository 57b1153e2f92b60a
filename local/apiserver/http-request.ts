import type { IncomingMessage } from 'node:http'
import { parse as parseYaml } from 'yaml'
import { ApiError, badRequest } from './api-error.js'
import { bodyHint } from './decoding.js'
import type { ResourceRegistry } from './resource-registry.js'
import { apiVersionOf } from './resource-type.js'
import type { DeleteOptions, ManagerOptions, PatchType, Target, WriteOptions } from './store/store-types.js'

/**
 * Reading a request to the API server (http-handler.ts answers it): the resource its path
 * addresses, its body decoded or refused in the real server's words, and the options its query
 * and headers carry.
 */

/** Request bodies above this are refused before parsing, like the real server's 3 MiB cap. */
const MAX_BODY_BYTES = 3 * 1024 * 1024

/** What a resource request addresses. */
export interface Route {
  target: Target
  ns?: string
  name?: string
  sub?: string
  watch: boolean
}

/** The resource a request path under /api or /apis addresses; undefined when the path names none. */
export function routeOf(segs: string[], registry: ResourceRegistry): Route | undefined {
  let group = ''
  let version: string
  let rest: string[]
  if (segs[0] === 'api') {
    version = segs[1] as string
    rest = segs.slice(2)
  } else {
    group = segs[1] as string
    version = segs[2] as string
    rest = segs.slice(3)
  }
  const av = apiVersionOf(group, version)
  let watch = false
  if (rest[0] === 'watch') {
    watch = true
    rest = rest.slice(1)
  }
  let ns: string | undefined
  if (rest[0] === 'namespaces' && rest.length >= 3 && registry.byPlural(av, rest[2] as string)?.namespaced) {
    ns = rest[1]
    rest = rest.slice(2)
  }
  if (rest.length === 0 || rest.length > 3) return undefined
  const rt = registry.byPlural(av, rest[0] as string)
  if (!rt) return undefined
  const addressed: Route = { target: { rt, version }, watch }
  if (ns !== undefined) addressed.ns = ns
  if (rest[1] !== undefined) addressed.name = rest[1]
  if (rest[2] !== undefined) addressed.sub = rest[2]
  if (!rt.namespaced && ns !== undefined) return undefined
  if (rt.namespaced && ns === undefined && addressed.name !== undefined) return undefined
  if (addressed.sub !== undefined && !(addressed.sub === 'status' && rt.statusSubresource) && !rt.extraSubresources.includes(addressed.sub)) return undefined
  return addressed
}

/** The patch type each patch media type names. */
export const PATCH_TYPES: Record<string, PatchType> = {
  'application/merge-patch+json': 'merge',
  'application/json-patch+json': 'json',
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
}

/** A request's body, refused with 413 past the size cap. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        reject(new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${MAX_BODY_BYTES}`))
        req.resume()
        return
      }
      chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

/**
 * Decodes a request body, refusing what does not decode in the real server's words: a create or
 * update names the kind it expected and shows the start of the body, a patch says so. Syntax
 * errors are explained by JavaScript's parser rather than Go's, except for an empty body.
 */
export function parseBody(raw: Buffer, contentType: string, kind: string, patch: boolean): unknown {
  const text = raw.toString('utf8')
  const yaml = contentType.includes('yaml')
  if (!text.trim()) {
    if (patch || yaml) return undefined
    throw badRequest(`the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`)
  }
  let value: unknown
  try {
    value = yaml ? parseYaml(text) : JSON.parse(text)
  } catch (err) {
    const why = firstLower((err as Error).message.split('\n')[0] ?? '')
    if (yaml) throw badRequest(`error decoding YAML: error converting YAML to JSON: yaml: ${why}`)
    if (patch) throw badRequest(`error decoding patch: ${why}`)
    throw badRequest(`the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: ${why} (${bodyHint(raw)})`)
  }
  if (!patch && !yaml && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    if (value === null) throw badRequest(`the object provided is unrecognized (must be of type ${kind}): Object 'Kind' is missing in 'null' (${bodyHint(raw)})`)
    const type = Array.isArray(value) ? 'array' : typeof value === 'boolean' ? 'bool' : typeof value
    throw badRequest(`the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: json: cannot unmarshal ${type} into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" } (${bodyHint(raw)})`)
  }
  return value
}

const firstLower = (s: string) => s.charAt(0).toLowerCase() + s.slice(1)

/** A query flag: `true` or `1`. */
export function queryFlag(query: URLSearchParams, key: string): boolean {
  const v = query.get(key)
  return v === 'true' || v === '1'
}

/** The options of a create, update or patch: dry run, field validation, field manager, force. */
export function writeOptions(query: URLSearchParams, req: IncomingMessage): WriteOptions & ManagerOptions & { force?: boolean } {
  const out: WriteOptions & ManagerOptions & { force?: boolean } = {}
  if (query.getAll('dryRun').includes('All')) out.dryRun = true
  const fv = query.get('fieldValidation')
  if (fv === 'Strict' || fv === 'Warn' || fv === 'Ignore') out.fieldValidation = fv
  const fm = query.get('fieldManager')
  if (fm) out.fieldManager = fm
  // Like the real server: a write that names no manager is recorded under its User-Agent's first part.
  const ua = String(req.headers['user-agent'] ?? '')
  out.defaultManager = ua ? (ua.split('/')[0] as string) : 'unknown'
  if (queryFlag(query, 'force')) out.force = true
  return out
}

/** Whether a delete asks with the deprecated orphanDependents=false. */
export function orphanDependentsFalse(body: unknown, query: URLSearchParams): boolean {
  return query.get('orphanDependents') === 'false' || (typeof body === 'object' && body !== null && (body as Record<string, unknown>).orphanDependents === false)
}

/** The options of a delete, from its query and body. */
export function deleteOptions(body: unknown, query: URLSearchParams): DeleteOptions {
  const out: DeleteOptions = {}
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>
  const policy = query.get('propagationPolicy') ?? b.propagationPolicy
  if (policy === 'Background' || policy === 'Foreground' || policy === 'Orphan') out.propagationPolicy = policy
  else if (policy !== undefined && policy !== null) throw badRequest(`invalid propagationPolicy: ${String(policy)}`)
  if (b.orphanDependents === true || query.get('orphanDependents') === 'true') out.propagationPolicy = 'Orphan'
  if (b.preconditions && typeof b.preconditions === 'object') out.preconditions = b.preconditions as DeleteOptions['preconditions'] & object
  if (query.getAll('dryRun').includes('All') || (Array.isArray(b.dryRun) && b.dryRun.includes('All'))) out.dryRun = true
  return out
}
