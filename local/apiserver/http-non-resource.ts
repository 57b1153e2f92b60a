import type { IncomingMessage, ServerResponse } from 'node:http'
import { noSuchResource } from './api-error.js'
import { apiGroup, apiVersions, groupList, resourceList, SERVER_VERSION } from './discovery.js'
import { sendJson } from './http-response.js'
import { openApiV2Document, openApiV3Document, openApiV3Index } from './openapi.js'
import { openApiV2Protobuf } from './openapi-v2-protobuf.js'
import type { ResourceRegistry } from './resource-registry.js'

/** The API server's answers outside the resources: version, health, discovery and OpenAPI documents. */

/** The media type of the protobuf OpenAPI v2 document. */
const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf'

/**
 * Answers a request outside the resources: /version, the health checks, discovery and OpenAPI.
 * False when the path lies under /api or /apis and is for the resource routes.
 */
export function nonResource(registry: ResourceRegistry, serverAddress: () => string, req: IncomingMessage, res: ServerResponse, segs: string[], registryPath: string): boolean {
  const reg = registry
  let body: object | undefined
  if (registryPath === '/openapi/v2') {
    openApiV2(registry, req, res)
    return true
  }
  if (registryPath === '/version') body = { ...SERVER_VERSION, gitCommit: '', gitTreeState: 'clean', buildDate: '1970-01-01T00:00:00Z', goVersion: `node${process.versions.node}`, compiler: 'node', platform: `${process.platform}/${process.arch}` }
  else if (registryPath === '/healthz' || registryPath === '/livez' || registryPath === '/readyz') {
    res.writeHead(200, { 'Content-Type': 'text/plain' })
    res.end('ok')
    return true
  } else if (registryPath === '/api') body = apiVersions(serverAddress())
  else if (registryPath === '/apis') body = groupList(reg)
  else if (segs[0] === 'api' && segs.length === 2) body = resourceList(reg, '', segs[1] as string)
  else if (segs[0] === 'apis' && segs.length === 2) body = apiGroup(reg, segs[1] as string)
  else if (segs[0] === 'apis' && segs.length === 3) body = resourceList(reg, segs[1] as string, segs[2] as string)
  else if (registryPath === '/openapi/v3') body = openApiV3Index(reg)
  else if (segs[0] === 'openapi' && segs[1] === 'v3') {
    const rest = segs.slice(2)
    if (rest[0] === 'api' && rest.length === 2) body = openApiV3Document(reg, '', rest[1] as string)
    else if (rest[0] === 'apis' && rest.length === 3) body = openApiV3Document(reg, rest[1] as string, rest[2] as string)
    if (!body) throw noSuchResource()
  } else if (segs[0] === 'api' || segs[0] === 'apis') return false
  else throw noSuchResource()
  if (!body) throw noSuchResource()
  sendJson(res, 200, JSON.stringify(body))
  return true
}

// client-go asks for the protobuf form only; other clients get JSON.
function openApiV2(registry: ResourceRegistry, req: IncomingMessage, res: ServerResponse): void {
  const doc = openApiV2Document(registry) as Record<string, unknown>
  const accept = String(req.headers.accept ?? '')
  const protobuf = accept.split(',').map((a) => a.split(';')[0]?.trim()).find((a) => a === OPENAPI_V2_PROTOBUF || a === 'application/json' || a === '*/*') === OPENAPI_V2_PROTOBUF
  if (protobuf) {
    // Answered under the name kube-apiserver gives it (a `@` is not valid in a Content-Type).
    res.writeHead(200, { 'Content-Type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'Cache-Control': 'no-cache, private' })
    res.end(openApiV2Protobuf(doc))
    return
  }
  sendJson(res, 200, JSON.stringify(doc))
}
