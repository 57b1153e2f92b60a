// Every process entry point the image carries, with one request each answers on its own: the
// event-driven functions get a CloudEvent their trigger would deliver but that needs no change
// (an object being deleted under someone else's finalizer, a tick with nothing to do), the HTTP
// functions get a request they refuse or answer without a cluster. Shared by the image tier.
import { readdirSync, existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CloudEvent, HTTP } from 'cloudevents'
import { parseAllDocuments } from 'yaml'

/** One HTTP request to send to a started function, and the statuses that mean it handled it. */
export interface Probe {
  describe: string
  method: string
  path: string
  headers: Record<string, string>
  body?: string
  statuses: number[]
}

const DELETING = '2026-01-01T00:00:00Z'

function cloudEvent(describe: string, event: CloudEvent<unknown>, statuses = [200, 202, 204]): Probe {
  const message = HTTP.binary(event)
  return { describe, method: 'POST', path: '/', headers: message.headers as Record<string, string>, body: message.body as string, statuses }
}

// An update of an object that is being deleted and holds only a foreign finalizer: nothing to do.
function deletingUpdate(source: string, apiVersion: string, kind: string, plural: string, spec: Record<string, unknown> = {}): Probe {
  const group = apiVersion.includes('/') ? `apis/${apiVersion}` : `api/${apiVersion}`
  const object = {
    apiVersion,
    kind,
    metadata: {
      name: 'image-probe',
      namespace: 'ai-agents',
      uid: '00000000-0000-4000-8000-00000000000a',
      generation: 1,
      resourceVersion: '7',
      creationTimestamp: DELETING,
      deletionTimestamp: DELETING,
      finalizers: ['example.com/hold'],
    },
    spec,
  }
  return cloudEvent(
    `${kind} update while deleting`,
    new CloudEvent({
      type: 'dev.knative.apiserver.resource.update',
      source: 'https://10.96.0.1:443',
      subject: `/${group}/namespaces/ai-agents/${plural}/image-probe`,
      datacontenttype: 'application/json',
      data: object,
      kind,
      apiversion: apiVersion,
      name: 'image-probe',
      namespace: 'ai-agents',
      kineticsource: source,
    }),
  )
}

function ping(source: string, data: Record<string, unknown>): Probe {
  return cloudEvent(
    `${source} tick`,
    new CloudEvent({ type: 'dev.knative.sources.ping', source: `/apis/v1/namespaces/kinetic-system/pingsources/${source}`, datacontenttype: 'application/json', data, kineticsource: source }),
  )
}

function http(describe: string, method: string, path: string, statuses: number[], body?: string): Probe {
  return { describe, method, path, headers: body ? { 'content-type': 'application/json' } : {}, body, statuses }
}

const PURKO = 'purko.io/v1alpha1'

/** The probe of each function by name; a function missing here fails the image test (add it). */
export const PROBES: Record<string, Probe> = {
  'agent-changed': deletingUpdate('resources', PURKO, 'Agent', 'agents'),
  'autonomy-tick': ping('autonomy', { reason: 'autonomy' }),
  'dead-letter': deletingUpdate('resources', PURKO, 'Workflow', 'workflows'),
  'llmprovider-changed': deletingUpdate('resources', PURKO, 'LLMProvider', 'llmproviders'),
  'mcpserver-changed': deletingUpdate('resources', PURKO, 'MCPServer', 'mcpservers'),
  'memoryprovider-changed': deletingUpdate('resources', PURKO, 'MemoryProvider', 'memoryproviders'),
  'recipe-child-changed': deletingUpdate('resources', 'apps/v1', 'Deployment', 'deployments'),
  'recipe-policy-changed': deletingUpdate('resources', PURKO, 'WorkflowRecipePolicy', 'workflowrecipepolicies'),
  'resync-tick': ping('resync', { reason: 'resync' }),
  'schedule-fired': ping('schedule', { namespace: 'ai-agents', name: 'image-probe', uid: '00000000-0000-4000-8000-00000000000b' }),
  'step-job-finished': deletingUpdate('resources', 'batch/v1', 'Job', 'jobs'),
  'workflow-changed': deletingUpdate('resources', PURKO, 'Workflow', 'workflows'),
  'workflow-template-changed': deletingUpdate('resources', PURKO, 'Workflow', 'workflows'),
  'workflowrecipe-changed': deletingUpdate('resources', PURKO, 'WorkflowRecipe', 'workflowrecipes'),
  // HTTP APIs rather than event sinks: a request without credentials must be refused, not crash.
  'run-control': http('POST /api/cancel without a token', 'POST', '/api/cancel/ai-agents/image-probe', [401], '{}'),
  'recipes-mcp': http('POST /mcp without a token', 'POST', '/mcp', [401], '{}'),
  'webhook-trigger': http('GET /api/trigger (POST only)', 'GET', '/api/trigger', [404, 405]),
  console: http('GET / (redirects to /workflows)', 'GET', '/', [301, 302, 303, 307, 308]),
}

/** Every functions/<name>/main.ts of the checkout, sorted: the entry points the image must run. */
export function functionNames(root: string): string[] {
  const dir = join(root, 'functions')
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(dir, entry.name, 'main.ts')))
    .map((entry) => entry.name)
    .sort()
}

/** The literal env values knative/services/<name>.yaml gives the function's container (valueFrom entries are left out). */
export function serviceEnv(root: string, name: string): Record<string, string> {
  const file = join(root, 'knative', 'services', `${name}.yaml`)
  if (!existsSync(file)) return {}
  const env: Record<string, string> = {}
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const service = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: Array<{ env?: Array<{ name: string; value?: string }> }> } } } }
    if (service?.kind !== 'Service') continue
    for (const entry of service.spec?.template?.spec?.containers?.[0]?.env ?? []) {
      if (entry.value !== undefined) env[entry.name] = entry.value
    }
  }
  return env
}
