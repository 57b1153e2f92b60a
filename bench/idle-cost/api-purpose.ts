// What one request to a Kubernetes API server was for, from its method and path alone.

const VERB_OF_METHOD: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }

/** "list workflows (all namespaces)", "get workflows", "update workflows/status", "create events", "watch jobs", or "discovery GET /apis". */
export function apiPurpose(method: string, url: string): string {
  const [path = '', query = ''] = url.split('?')
  const segs = path.split('/').filter(Boolean)
  // /api/<version>/... and /apis/<group>/<version>/...
  const rest = segs[0] === 'api' ? segs.slice(2) : segs[0] === 'apis' ? segs.slice(3) : []
  if (rest.length === 0) return `discovery ${method} ${path}`
  const namespaced = rest[0] === 'namespaces' && rest.length >= 3
  const [resource, name, sub] = namespaced ? rest.slice(2) : rest
  const what = `${resource}${sub ? `/${sub}` : ''}`
  if (method === 'GET') {
    if (name) return `get ${what}`
    const verb = new URLSearchParams(query).get('watch') === 'true' ? 'watch' : 'list'
    return `${verb} ${what}${namespaced || resource === 'namespaces' ? '' : ' (all namespaces)'}`
  }
  return `${VERB_OF_METHOD[method] ?? method} ${what}`
}
