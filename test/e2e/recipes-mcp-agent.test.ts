import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import type { KubeObject } from '../../local/knative/kube-http.js'
import type { DeliveryRecord } from '../../local/knative/broker.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'

// examples/local/recipes-mcp/ as shipped: a template, an Agent whose tool is the MCP server
// `recipes`, and a Workflow whose offline steps list the templates and deploy the first one.
const ROOT = join(import.meta.dirname, '../..')
const DIR = join(ROOT, 'examples', 'local', 'recipes-mcp')
const NS = 'ai-agents'
const WF_PATH = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/self-service`
const RECIPE_PATH = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes/hello`
const TEMPLATE_PATH = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes/hello-web`
const REGISTRY_PATH = `/api/v1/namespaces/${NS}/configmaps/mcp-servers`

type Step = { name: string; phase?: string; error?: string }
type Wf = KubeObject & { status?: { phase?: string; message?: string; stepStatuses?: Step[] } }
type Recipe = KubeObject & { status?: { phase?: string; reason?: string; history?: Array<{ to?: string }>; readyWorkloads?: string } }

let plane: LocalPlane
const deliveries: DeliveryRecord[] = []
let final: Wf
let recipe: Recipe

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until<T>(what: string, deadline: number, probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(200)
  }
}

beforeAll(async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-e2e-recipes-mcp-'))
  plane = await startLocalPlane({ root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs'), pingIntervalMs: 5000 })
  plane.knative.onDelivery((d) => deliveries.push(d))
  const deadline = Date.now() + 150_000
  // The plane registers recipes-mcp as MCPServer `recipes`; a step started before the registry
  // lists it would get no such server, so the Workflow goes in once it does (as with kubectl
  // apply on a plane that has been up for a moment).
  await until('the recipes server in the mcp-servers registry', deadline, async () => {
    const cm = await plane.kube.get(REGISTRY_PATH)
    const servers = JSON.parse(String((cm?.data as Record<string, string> | undefined)?.servers ?? '[]')) as Array<{ name?: string }>
    return servers.some((s) => s.name === 'recipes') ? true : undefined
  })
  const objects = readdirSync(DIR).filter((n) => n.endsWith('.yaml')).sort()
    .flatMap((n) => parseAllDocuments(readFileSync(join(DIR, n), 'utf8')).map((d) => d.toJSON() as KubeObject))
  for (const obj of objects) {
    if (obj.kind === 'Workflow') {
      // A step waits for its agent's ServiceAccount; the resync tick would re-drive it, later.
      await until('the agent ServiceAccount', deadline, async () => {
        const agent = (await plane.kube.get(`/apis/purko.io/v1alpha1/namespaces/${NS}/agents/recipe-operator`)) as { status?: { serviceAccountName?: string } } | null
        return agent?.status?.serviceAccountName ? true : undefined
      })
    }
    await plane.kube.apply(obj)
  }
  final = await until('the self-service run to end', deadline, async () => {
    const wf = (await plane.kube.get(WF_PATH)) as Wf
    return ['Succeeded', 'Failed', 'Cancelled', 'CompletedWithErrors'].includes(wf.status?.phase ?? '') ? wf : undefined
  })
  recipe = await until('the deployed recipe to settle', deadline, async () => {
    const r = (await plane.kube.get(RECIPE_PATH)) as Recipe | null
    return ['Active', 'Failed', 'Rejected', 'RollbackFailed'].includes(r?.status?.phase ?? '') ? r! : undefined
  }).catch(async (err: unknown) => {
    throw new Error(`${(err as Error).message}: run ${JSON.stringify(final.status)}, recipe ${JSON.stringify((await plane.kube.get(RECIPE_PATH))?.status)}`)
  })
}, 240_000)

afterAll(async () => {
  await plane?.stop()
}, 30_000)

async function outputs(): Promise<Record<string, Record<string, unknown>>> {
  const cm = await plane.kube.get(`/api/v1/namespaces/${NS}/configmaps/self-service-outputs`)
  const data = (cm?.data ?? {}) as Record<string, string>
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, JSON.parse(v) as Record<string, unknown>]))
}

describe('an agent deploys a recipe through recipes-mcp on the local plane', () => {
  it('runs both offline steps to Succeeded, each calling its MCP tool on the server recipes', async () => {
    expect(final.status?.phase, JSON.stringify(final.status)).toBe('Succeeded')
    const out = await outputs()
    expect(out['list-templates']).toMatchObject({
      tools_called: ['list-recipes'],
      tool_call_log: [{ tool: 'list-recipes', server: 'recipes', status: 'ok' }],
      mcp: { server: 'recipes', tool: 'list-recipes', isError: false, structuredContent: { items: [expect.objectContaining({ namespace: NS, name: 'hello-web', template: true })] } },
    })
    expect(out.deploy).toMatchObject({
      response: 'deploy done: Deploy the template hello-web as hello. (tools: deploy-recipe)',
      tool_call_log: [{ tool: 'deploy-recipe', server: 'recipes', status: 'ok' }],
      mcp: { tool: 'deploy-recipe', isError: false, structuredContent: { namespace: NS, name: 'hello', created: true, dryRun: false, specValid: true } },
    })
  })

  it('creates the recipe from the template, marked as deployed through MCP, and it reaches Active', async () => {
    expect(recipe.status?.phase, JSON.stringify(recipe.status)).toBe('Active')
    expect(recipe.metadata?.annotations).toMatchObject({ 'purko.io/deployed-via': 'mcp', 'purko.io/recipe-template': `${NS}/hello-web` })
    expect(recipe.metadata?.annotations?.['purko.io/template']).toBeUndefined()
    expect(recipe.status?.history?.map((h) => h.to)).toContain('Active')
    const triggers = new Set(deliveries.filter((d) => d.outcome === 'delivered').map((d) => d.trigger))
    expect(triggers).toContain('workflowrecipe-changed')
  })

  it('deploys the template workload with the value the Workflow passed', async () => {
    const deployments = (await plane.kube.request<{ items: Array<KubeObject & { spec?: { template?: { spec?: { containers?: Array<{ env?: Array<{ name: string; value?: string }> }> } } }; status?: { readyReplicas?: number } }> }>(
      'GET', `/apis/apps/v1/deployments?labelSelector=${encodeURIComponent('purko.io/recipe=hello')}`,
    )).items
    expect(deployments).toHaveLength(1)
    expect(deployments[0]?.status?.readyReplicas).toBe(1)
    expect(deployments[0]?.spec?.template?.spec?.containers?.[0]?.env).toContainEqual({ name: 'GREETING', value: 'Hello from an agent' })
  })

  it('leaves the template itself undeployed', async () => {
    const template = (await plane.kube.get(TEMPLATE_PATH)) as Recipe | null
    expect(template?.status).toMatchObject({ phase: 'Candidate', reason: 'Template' })
  })
})
