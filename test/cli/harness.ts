import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ApiextensionsV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { stringify } from 'yaml'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { main, type CliIo } from '../../cli/main.js'
import { currentRunId } from '../../shared/workflow/plan/run-status.js'
import type { Workflow } from '../../shared/schemas/workflow.js'

/** What one in-process CLI run printed and returned. */
export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** The embedded API server with Kinetic's CRDs, a kubeconfig file pointing at it, and the CLI. */
export interface CliPlane {
  api: ApiServer
  custom: CustomObjectsApi
  dir: string
  kubeconfigPath: string
  /** Runs `kinetic <argv>` in-process with KUBECONFIG set to the plane's kubeconfig (overridable). */
  cli(argv: string[], io?: Partial<CliIo>): Promise<CliResult>
  close(): Promise<void>
}

/** A kubeconfig with two contexts on the same server: `local` (namespace ai-agents, user alice) and `team-b` (user bob, no namespace). */
export function kubeconfigFor(server: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'embedded', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'alice', user: { token: 'alice-token' } }, { name: 'bob', user: { token: 'bob-token' } }],
    contexts: [
      { name: 'local', context: { cluster: 'embedded', user: 'alice', namespace: 'ai-agents' } },
      { name: 'team-b', context: { cluster: 'embedded', user: 'bob' } },
    ],
    'current-context': 'local',
  })
}

/** Starts the plane for one test file. */
export async function startCliPlane(): Promise<CliPlane> {
  const api = await startApiServer({ namespaces: ['default', 'ai-agents', 'team-b', 'kube-system'] })
  const kc = api.kubeConfigObject()
  const ext = kc.makeApiClient(ApiextensionsV1Api)
  const crds = join(import.meta.dirname, '../../crds')
  for (const file of readdirSync(crds).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(crds, file), 'utf8')) })
  }
  const dir = mkdtempSync(join(tmpdir(), 'kinetic-cli-'))
  const kubeconfigPath = join(dir, 'config')
  writeFileSync(kubeconfigPath, kubeconfigFor(api.url))
  return {
    api,
    custom: kc.makeApiClient(CustomObjectsApi),
    dir,
    kubeconfigPath,
    async cli(argv, io = {}) {
      let stdout = ''
      let stderr = ''
      const code = await main(argv, {
        env: { KUBECONFIG: kubeconfigPath },
        home: dir,
        pollMs: 20,
        ...io,
        stdout: (t) => { stdout += t; io.stdout?.(t) },
        stderr: (t) => { stderr += t; io.stderr?.(t) },
      })
      return { code, stdout, stderr }
    },
    async close() {
      await api.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Creates a purko.io object in ai-agents (or the namespace given). */
export async function create(plane: CliPlane, plural: string, body: Record<string, unknown>, namespace = 'ai-agents'): Promise<Record<string, any>> {
  return plane.custom.createNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace, plural, body })
}

/** Reads a Workflow as the API server has it. */
export async function workflow(plane: CliPlane, name: string, namespace = 'ai-agents'): Promise<Record<string, any>> {
  return plane.custom.getNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace, plural: 'workflows', name })
}

/** Replaces a Workflow's status through the status subresource (as the engine would). */
export async function setStatus(plane: CliPlane, name: string, status: Record<string, unknown>, namespace = 'ai-agents'): Promise<void> {
  const current = await workflow(plane, name, namespace)
  await plane.custom.replaceNamespacedCustomObjectStatus({
    group: 'purko.io', version: 'v1alpha1', namespace, plural: 'workflows', name,
    body: { ...current, status },
  })
}

/** The id of the Workflow's current run, as the engine writes it in status (another id reads as a rerun about to start). */
export async function currentRunOf(plane: CliPlane, name: string, namespace = 'ai-agents'): Promise<string> {
  return currentRunId(await workflow(plane, name, namespace) as Workflow)
}

/** A Workflow body: steps given as `name` or `name<dep1,dep2`. */
export function aWorkflow(name: string, steps: string[], extra: { annotations?: Record<string, string>; spec?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Workflow',
    metadata: { name, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      steps: steps.map((s) => {
        const [stepName, deps] = s.split('<') as [string, string | undefined]
        return { name: stepName, agentRef: { name: 'writer' }, ...(deps ? { dependsOn: deps.split(',') } : {}) }
      }),
      ...(extra.spec ?? {}),
    },
  }
}
