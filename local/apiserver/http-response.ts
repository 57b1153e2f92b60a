import type { ServerResponse } from 'node:http'
import type { ApiError } from './api-error.js'
import type { IncludeObject } from './table.js'
import type { KubeObject } from './types.js'

/** Writing an answer of the API server: JSON with warnings, errors as Status, and the form the client asked for. */

/** Answers with a JSON body and, as `Warning` headers, the warnings. */
export function sendJson(res: ServerResponse, code: number, body: string, warnings: string[] = []): void {
  const headers: Record<string, string | string[]> = { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' }
  if (warnings.length) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`)
  res.writeHead(code, headers)
  res.end(body)
}

/** Answers with the error as a Status (or ends a stream already under way). */
export function sendError(res: ServerResponse, err: ApiError): void {
  if (res.headersSent) {
    res.end()
    return
  }
  sendJson(res, err.code, JSON.stringify(err.toStatus()))
}

/** The form a client asked for: the object itself, a Table, or PartialObjectMetadata. */
export type Rendering = { kind: 'json' } | { kind: 'table'; include: IncludeObject } | { kind: 'partial' }

/** The rendering a request's Accept header and includeObject ask for. */
export function rendering(accept: string | undefined, query: URLSearchParams): Rendering {
  if (!accept) return { kind: 'json' }
  if (accept.includes('as=Table')) {
    const inc = query.get('includeObject')
    return { kind: 'table', include: inc === 'None' || inc === 'Object' ? inc : 'Metadata' }
  }
  if (accept.includes('as=PartialObjectMetadata')) return { kind: 'partial' }
  return { kind: 'json' }
}

/** An object as PartialObjectMetadata. */
export function partial(obj: KubeObject): object {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata }
}
