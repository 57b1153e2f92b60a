import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { executorCommand, REPO_ROOT, type StepCommand } from '../../local/jobs/step-process.js'
import type { KubeHttp, KubeObject } from '../../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane, type LocalPlaneOptions } from '../../local/plane.js'
import type { Logger } from '../../shared/log.js'
import type { ControlPlane } from '../../cluster/control-plane.js'
import { grantNamespace } from './namespace-grants.js'
import { startNodeAgent, type NodeAgent } from './node-agent.js'

/** The whole product against a real control plane: dev mode's code path plus the test node agent. */
export interface ClusterWorkflowPlane {
  plane: LocalPlane
  agent: NodeAgent
  admin: KubeHttp
  /** Log lines of the function processes at level warn or above, as `<function>: <line>`. */
  functionWarnings(): string[]
  /** Creates a namespace that enforces the restricted Pod Security Standard, with the test Agents. */
  namespace(name: string): Promise<void>
  stop(): Promise<void>
}

/** Images the node agent runs as something other than the executor (tests only). */
export const TEST_IMAGES = {
  /** Prints one OUTPUT line at once: cheap steps for large fan-outs. */
  echo: 'kinetic-test/echo',
  /** Sleeps N seconds, then prints its OUTPUT line. */
  sleep: (seconds: number) => `kinetic-test/sleep:${seconds}`,
} as const

/**
 * What a step pod runs on the test node: the project's executor, unless the container names one
 * of the TEST_IMAGES (a kubelet runs what the image holds; these images hold tiny scripts).
 */
export function testImageCommand(pod: KubeObject): StepCommand {
  const image = ((pod.spec as { containers?: Array<{ image?: string }> }).containers?.[0]?.image) ?? ''
  const output = 'console.log("OUTPUT:" + JSON.stringify({ response: process.env.STEP_NAME + " done", step: process.env.STEP_NAME, image: ' + JSON.stringify(image) + ' }))'
  if (image === TEST_IMAGES.echo) return { command: process.execPath, args: ['-e', output], cwd: REPO_ROOT }
  const sleep = /^kinetic-test\/sleep:(\d+)$/.exec(image)
  if (sleep) return { command: process.execPath, args: ['-e', `setTimeout(() => { ${output} }, ${Number(sleep[1]) * 1000})`], cwd: REPO_ROOT }
  return executorCommand()
}

/** The Agents every test namespace gets. */
export function testAgents(namespace: string): KubeObject[] {
  const agent = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name, namespace },
    spec: { model: { provider: 'offline', name: 'scripted' }, ...spec },
  })
  return [
    agent('writer', {}),
    agent('failer', { runtime: { config: { 'offline.fail': 'the model is unavailable' } } }),
    agent('approver', { guardrails: { humanApprovalRequired: true } }),
    agent('echo', { runtime: { image: TEST_IMAGES.echo } }),
    // Long enough that the failer's Job has failed before it ends, even on a loaded 2-core machine
    // (4 s was not: the stop scenario then rightly started the dependent step).
    agent('slow', { runtime: { image: TEST_IMAGES.sleep(20) } }),
    agent('sleeper', { runtime: { image: TEST_IMAGES.sleep(120) } }),
  ]
}

/**
 * Starts the functions and the Knative emulation against the control plane exactly as
 * `npm start -- --kubeconfig <admin kubeconfig>` does (crds/ and knative/'s RBAC installed,
 * every function as its own ServiceAccount, no local Job runner), plus the node agent that
 * runs the step pods the real Job controller creates.
 */
export async function startClusterWorkflowPlane(cp: ControlPlane, opts: { log?: Logger; pingIntervalMs?: number; concurrency?: number; plane?: Partial<LocalPlaneOptions> } = {}): Promise<ClusterWorkflowPlane> {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-cluster-e2e-'))
  const agent = await startNodeAgent({
    kubeConfig: cp.adminKubeConfig(), command: testImageCommand, concurrency: opts.concurrency ?? 6,
    ...(opts.log ? { log: opts.log.child({ component: 'node-agent' }) } : {}),
  })
  let plane: LocalPlane
  try {
    plane = await startLocalPlane({
      root: REPO_ROOT,
      cluster: { kubeConfig: cp.adminKubeConfig(), kubeconfigPath: cp.adminKubeconfigPath },
      jobs: 'cluster',
      logDir: join(scratch, 'logs'),
      identityDir: join(scratch, 'identities'),
      pingIntervalMs: opts.pingIntervalMs ?? 2000,
      ...(opts.log ? { log: opts.log } : {}),
      ...(opts.plane ?? {}),
    })
  } catch (err) {
    await agent.stop()
    throw err
  }
  const admin = cp.admin
  return {
    plane, agent, admin,
    functionWarnings() {
      const out: string[] = []
      for (const fn of plane.functions.values()) {
        let text = ''
        try {
          text = readFileSync(fn.logFile, 'utf8')
        } catch {
          continue
        }
        for (const line of text.split('\n')) {
          if (line.trim() === '') continue
          let level: unknown
          try {
            level = (JSON.parse(line) as { level?: unknown }).level
          } catch {
            level = 'warn' // not a log line of ours: stderr output
          }
          if (typeof level === 'number' ? level >= 40 : ['warn', 'error', 'fatal'].includes(String(level))) out.push(`${fn.name}: ${line}`)
        }
      }
      return out
    },
    async namespace(name) {
      await admin.request('POST', '/api/v1/namespaces', {
        apiVersion: 'v1', kind: 'Namespace',
        metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/warn': 'restricted' } },
      })
      // Pods of a namespace are refused until the controller manager made its default ServiceAccount.
      const deadline = Date.now() + 30_000
      while (!(await admin.get(`/api/v1/namespaces/${name}/serviceaccounts/default`))) {
        if (Date.now() > deadline) throw new Error(`No default ServiceAccount in ${name} after 30 s`)
        await new Promise((r) => setTimeout(r, 100))
      }
      await grantNamespace(admin, name)
      for (const a of testAgents(name)) await admin.apply(a)
      // Steps wait for their agent's ServiceAccount (the real ServiceAccount admission refuses a
      // pod without it); agent-changed reports it in status once it made it. Many namespaces
      // created at once queue many Agents for it, hence the longer wait.
      const identitiesBy = Date.now() + 90_000
      for (const a of testAgents(name)) {
        const path = `/apis/purko.io/v1alpha1/namespaces/${name}/agents/${String((a.metadata as { name: string }).name)}`
        while (!((await admin.get(path)) as { status?: { serviceAccountName?: string } } | null)?.status?.serviceAccountName) {
          if (Date.now() > identitiesBy) throw new Error(`agent-changed reported no ServiceAccount for ${path} in 90 s`)
          await new Promise((r) => setTimeout(r, 100))
        }
      }
    },
    async stop() {
      await plane.stop()
      await agent.stop()
      rmSync(scratch, { recursive: true, force: true })
    },
  }
}
