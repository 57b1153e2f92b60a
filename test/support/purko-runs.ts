// purko's example manifests, run to the end as a user would: applied as shipped except for the
// anthropic LLMProvider's endpoint (pointed at test/fixtures/anthropic-stand-in.mjs) and the
// example Secrets' placeholder values, then every Workflow driven to its end with each step that
// waits for a person approved through the `kinetic` CLI. One module for the embedded plane
// (test/e2e/purko-examples.test.ts) and real Pods (test/knative/real/purko.ts), so both are held
// to the same expectations.
import { execFile } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { parseAllDocuments } from 'yaml'
import { expect } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { eventually } from './eventually.js'
import { referenceDir } from './reference.js'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '../..')
export const STAND_IN_SCRIPT = join(ROOT, 'test', 'fixtures', 'anthropic-stand-in.mjs')
export const PURKO = '/apis/purko.io/v1alpha1'
export const AGENTS_NS = 'ai-agents'
/** The example Workflows, all in ai-agents. */
export const EXAMPLE_WORKFLOWS = ['code-development-pipeline', 'intake-to-delivery', 'parallel-research-pipeline', 'research-report', 'review-pipeline'] as const

export interface StepStatus { name: string; phase: string; error?: string; jobName?: string }
export interface Workflow extends KubeObject { status?: { phase?: string; message?: string; stepStatuses?: StepStatus[] } }
/** What the stand-in saw of one Messages request. */
export interface SeenRequest { answerId: string; model: string; system: string; user: string }

function files(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.yaml') ? [p] : []
  })
}

/**
 * Every object of purko's examples, in an order that applies cleanly (providers and Secrets,
 * then MCP servers, agents and their claims, policies, and the Workflows last), with the
 * anthropic provider at `endpoint` and its Secret holding `key`.
 */
export function purkoExampleObjects(endpoint: string, key: string): KubeObject[] {
  const all = files(join(referenceDir(), 'purko', 'examples'))
    .flatMap((f) => parseAllDocuments(readFileSync(f, 'utf8')).map((d) => d.toJS() as KubeObject | null))
    .filter((o): o is KubeObject => o !== null)
  const order = ['Secret', 'LLMProvider', 'MemoryProvider', 'MCPServer', 'PersistentVolumeClaim', 'Agent', 'AgentAutonomyPolicy', 'Workflow']
  return all
    .map((o) => {
      if (o.kind === 'LLMProvider' && o.metadata?.name === 'anthropic') return { ...o, spec: { ...(o.spec as object), endpoint } }
      if (o.kind === 'Secret' && o.metadata?.name === 'anthropic-key') return { ...o, stringData: { 'api-key': key } }
      return o
    })
    .sort((a, b) => order.indexOf(a.kind as string) - order.indexOf(b.kind as string))
}

/** Settled phases of a Workflow run. */
const ENDED = ['Succeeded', 'Failed', 'Cancelled', 'CompletedWithErrors']

export interface Driver {
  get: (path: string) => Promise<unknown>
  /** The `kinetic` CLI with its kubeconfig and `-n ai-agents`; resolves with stdout. */
  cli: (...args: string[]) => Promise<string>
}

/** A `kinetic` CLI runner for `kubeconfig` in ai-agents. */
export function kineticCli(kubeconfig: string): Driver['cli'] {
  return async (...args) => (await run(process.execPath, [join(ROOT, 'bin', 'kinetic.mjs'), '--kubeconfig', kubeconfig, '-n', AGENTS_NS, ...args], { cwd: ROOT })).stdout
}

/**
 * Drives every example Workflow to its end: each step that waits for a person is approved with
 * `kinetic approve`, as it comes. Resolves with the final Workflows and the approvals granted
 * (`<workflow>/<step>`); throws naming each unfinished run and its steps at the deadline.
 */
export async function driveToEnd(d: Driver, ms: number): Promise<{ finals: Map<string, Workflow>; approved: string[] }> {
  const deadline = Date.now() + ms
  const approved: string[] = []
  const finals = new Map<string, Workflow>()
  for (;;) {
    for (const name of EXAMPLE_WORKFLOWS) {
      if (finals.has(name)) continue
      const wf = (await d.get(`${PURKO}/namespaces/${AGENTS_NS}/workflows/${name}`)) as Workflow | null
      if (ENDED.includes(wf?.status?.phase ?? '')) {
        finals.set(name, wf!)
        continue
      }
      for (const s of wf?.status?.stepStatuses ?? []) {
        const id = `${name}/${s.name}`
        if (!/Waiting for human approval/.test(s.error ?? '') || approved.includes(id)) continue
        const out = await d.cli('approve', name, s.name)
        if (!/approved/.test(out)) throw new Error(`kinetic approve ${name} ${s.name} printed: ${out}`)
        approved.push(id)
      }
    }
    if (finals.size === EXAMPLE_WORKFLOWS.length) return { finals, approved }
    if (Date.now() > deadline) {
      const open = await Promise.all(EXAMPLE_WORKFLOWS.filter((n) => !finals.has(n)).map(async (n) => {
        const wf = (await d.get(`${PURKO}/namespaces/${AGENTS_NS}/workflows/${n}`)) as Workflow | null
        return `${n} ${wf?.status?.phase ?? 'no phase'}: ${JSON.stringify(wf?.status?.stepStatuses?.map((s) => [s.name, s.phase, s.error]))}`
      }))
      throw new Error(`purko's example Workflows did not end within ${ms / 1000} s: ${open.join('; ')}`)
    }
    await new Promise((r) => setTimeout(r, 1000))
  }
}

/** The phase of every step of every run, as `<workflow>/<step>: <phase>`, sorted. */
export function stepPhases(finals: Map<string, Workflow>): string[] {
  return [...finals].flatMap(([name, wf]) => (wf.status?.stepStatuses ?? []).map((s) => `${name}/${s.name}: ${s.phase}`)).sort()
}

/** The outputs of a run's steps, from `<workflow>-outputs`. */
async function outputsOf(get: Driver['get'], workflow: string): Promise<Record<string, Record<string, unknown>>> {
  const cm = (await get(`/api/v1/namespaces/${AGENTS_NS}/configmaps/${workflow}-outputs`)) as { data?: Record<string, string> } | null
  return Object.fromEntries(Object.entries(cm?.data ?? {}).map(([k, v]) => [k, JSON.parse(v) as Record<string, unknown>]))
}

interface Agent extends KubeObject { spec: { guardrails?: { humanApprovalRequired?: boolean } }; status?: { serviceAccountName?: string; metrics?: { totalInvocations?: number; totalCostUSD?: number; totalTokensUsed?: number } } }
interface Provider extends KubeObject { status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> } }

/** Where purko's examples run and how to reach what the test needs there. */
export interface PurkoTarget {
  kubeconfig: string
  get: Driver['get']
  apply: (obj: KubeObject) => Promise<unknown>
  /** The stand-in's Messages API base as the plane's pods reach it (`.../v1`). */
  endpoint: string
  key: string
  /** What the stand-in saw, read from where the test runs. */
  requests: () => Promise<SeenRequest[]>
  ms: number
}

/** Everything the expectations look at, gathered once the runs ended. */
export interface PurkoRuns {
  objects: KubeObject[]
  provider: Provider
  finals: Map<string, Workflow>
  approved: string[]
  outputs: Map<string, Record<string, Record<string, unknown>>>
  agents: Map<string, Agent>
  /** Each Agent's `totalInvocations` before the examples were applied (an Agent of the same name may exist). */
  invocationsBefore: Map<string, number>
  requests: SeenRequest[]
}

/** Applies purko's examples to `t`, drives every example Workflow to its end and gathers the evidence. */
export async function purkoRunsOn(t: PurkoTarget): Promise<PurkoRuns> {
  const deadline = Date.now() + t.ms
  const objects = purkoExampleObjects(t.endpoint, t.key)
  const agentPath = (o: KubeObject) => `${PURKO}/namespaces/${o.metadata?.namespace}/agents/${o.metadata?.name}`
  const invocationsBefore = new Map(await Promise.all(objects.filter((o) => o.kind === 'Agent').map(async (o) =>
    [o.metadata?.name as string, ((await t.get(agentPath(o))) as Agent | null)?.status?.metrics?.totalInvocations ?? 0] as const)))
  for (const obj of objects) {
    if (obj.kind === 'Workflow') {
      // As a user who applies a folder and waits for `kubectl get agents` to show them ready:
      // a step whose agent has no identity yet waits for the resync instead of starting.
      const names = objects.filter((o) => o.kind === 'Agent' && o.metadata?.namespace === AGENTS_NS).map((o) => o.metadata?.name as string)
      await eventually('every example Agent\'s ServiceAccount', async () => {
        for (const n of names) if (!((await t.get(`${PURKO}/namespaces/${AGENTS_NS}/agents/${n}`)) as Agent | null)?.status?.serviceAccountName) return undefined
        return true
      }, Math.max(1, deadline - Date.now()), 500)
    }
    await t.apply(obj)
  }
  const { finals, approved } = await driveToEnd({ get: t.get, cli: kineticCli(t.kubeconfig) }, Math.max(1, deadline - Date.now()))
  const outputs = new Map(await Promise.all(EXAMPLE_WORKFLOWS.map(async (n) => [n, await outputsOf(t.get, n)] as const)))
  const agents = new Map(await Promise.all(objects.filter((o) => o.kind === 'Agent').map(async (o) =>
    [o.metadata?.name as string, (await t.get(agentPath(o))) as Agent] as const)))
  const provider = (await t.get(`${PURKO}/namespaces/purko-system/llmproviders/anthropic`)) as Provider
  return { objects, provider, finals, approved, outputs, agents, invocationsBefore, requests: await t.requests() }
}

/** The steps of the example Workflows, as `<workflow>/<step>`, with the agent each names. */
function exampleSteps(objects: KubeObject[]): Array<{ id: string; agent: string }> {
  return objects.filter((o) => o.kind === 'Workflow').flatMap((o) =>
    ((o.spec as { steps: Array<{ name: string; agentRef: { name: string } }> }).steps).map((s) => ({ id: `${o.metadata?.name}/${s.name}`, agent: s.agentRef.name })))
}

/** What a purko user sees once the examples ran, on any plane. */
export function expectPurkoRuns(r: PurkoRuns): void {
  // The anthropic provider was probed through its endpoint with the key from its Secret.
  expect(r.provider.status?.phase, JSON.stringify(r.provider.status)).toBe('Ready')
  expect(r.provider.status?.conditions?.find((c) => c.type === 'ModelAvailable')?.status).toBe('True')
  // Every run ended Succeeded with every step Succeeded (the router's answer lists documentation
  // and codebase, so both conditional searches ran).
  const steps = exampleSteps(r.objects)
  expect([...r.finals.keys()].sort()).toEqual([...EXAMPLE_WORKFLOWS])
  for (const [name, wf] of r.finals) expect(wf.status?.phase, `${name}: ${JSON.stringify(wf.status)}`).toBe('Succeeded')
  expect(stepPhases(r.finals)).toEqual(steps.map((s) => `${s.id}: Succeeded`).sort())
  // Exactly the steps of agents with guardrails.humanApprovalRequired waited for a person.
  const needApproval = steps.filter((s) => r.agents.get(s.agent)?.spec.guardrails?.humanApprovalRequired === true).map((s) => s.id)
  expect(needApproval.length).toBeGreaterThan(0)
  expect([...r.approved].sort()).toEqual(needApproval.sort())
  // One model call per step (no tools are reachable, so no tool turns), each answer recorded as
  // that step's output, with the model the Agent names.
  expect(r.requests).toHaveLength(steps.length)
  const answers = [...r.outputs].flatMap(([wf, out]) => Object.entries(out).map(([step, o]) => [`${wf}/${step}`, o] as const))
  expect(answers.map(([id]) => id).sort()).toEqual(steps.map((s) => s.id).sort())
  expect(new Set(answers.map(([, o]) => o.answerId)).size).toBe(steps.length)
  expect(new Set(r.requests.map((q) => q.model))).toEqual(new Set(['claude-sonnet-4-6']))
  // Outputs flow: review-pipeline's review step was asked with the analysis its analyze step got.
  const analyzed = r.outputs.get('review-pipeline')?.analyze?.answerId as string
  const review = r.requests.find((q) => q.user.includes('Analysis context:'))
  expect(analyzed).toMatch(/^a-\d+$/)
  expect(review?.user).toMatch(new RegExp(`answerId\\W+${analyzed}\\b`))
  // Usage reaches the Agents: each example Agent that ran steps counts them (on top of what an
  // Agent of the same name had counted before), with tokens and cost at the provider's prices.
  for (const [agent, count] of countBy(steps.map((s) => s.agent))) {
    const metrics = r.agents.get(agent)?.status?.metrics
    expect((metrics?.totalInvocations ?? 0) - (r.invocationsBefore.get(agent) ?? 0), agent).toBe(count)
    expect(metrics?.totalTokensUsed ?? 0, agent).toBeGreaterThan(0)
    expect(metrics?.totalCostUSD ?? 0, agent).toBeGreaterThan(0)
  }
}

function countBy(xs: string[]): Map<string, number> {
  const m = new Map<string, number>()
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1)
  return m
}
