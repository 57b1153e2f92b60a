import { spawn } from 'node:child_process'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { REPO_ROOT } from '../../local/jobs/step-process.js'
import { startNodeAgent, type NodeAgent } from './node-agent.js'
import { describeCluster, useControlPlane } from './tier.js'

function demo(kubeconfig: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    // The command a user types, with the kubeconfig of an existing cluster.
    const child = spawn('npm', ['run', '-s', 'demo', '--', '--kubeconfig', kubeconfig, '--timeout', '150'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (c: Buffer) => { out += c.toString() })
    child.stderr.on('data', (c: Buffer) => { out += c.toString() })
    child.once('error', reject)
    child.once('exit', (code) => resolve({ code, out }))
  })
}

describeCluster('npm run demo -- --kubeconfig <file> against an existing cluster (a real kube-apiserver with no Knative)', () => {
  // The admission plugin OpenShift and hardened clusters run: ownerReferences with
  // blockOwnerDeletion need update on the owner's finalizers.
  const cp = useControlPlane({ controllerManager: true, apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'] })
  let agent: NodeAgent

  beforeAll(async () => {
    agent = await startNodeAgent({ kubeConfig: cp.current.adminKubeConfig() })
  })
  afterAll(async () => {
    await agent?.stop()
  })

  it('installs crds/ and knative/\'s RBAC, runs every function as its own ServiceAccount, and the example Succeeds on the cluster', async () => {
    const { code, out } = await demo(cp.current.adminKubeconfigPath)

    expect(out, out).toMatch(/^Demo Succeeded in [\d.]+ s: the run Succeeded and ai-agents\/shop is Active\.$/m)
    expect(code).toBe(0)
    for (const fn of ['workflow-changed', 'step-job-finished', 'resync-tick', 'dead-letter', 'recipes-mcp']) {
      expect(out).toContain(`as system:serviceaccount:kinetic-system:${fn})`)
    }
    // Against a cluster the recipes MCP server checks callers with its TokenReview, as in-cluster.
    expect(out).toMatch(/^ {2}recipes MCP http:\/\/127\.0\.0\.1:\d+\/mcp {2}\(auth: kubernetes: /m)
    const admin = cp.current.admin
    const crds = await admin.request<{ items: Array<{ metadata: { name: string } }> }>('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions')
    expect(crds.items.map((c) => c.metadata.name)).toEqual(expect.arrayContaining(['agents.purko.io', 'workflows.purko.io']))
    expect(await admin.get('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kinetic-step-job-finished')).not.toBeNull()
    // The step Jobs ran on the cluster: the real Job controller made their pods, the node ran them.
    const jobs = await admin.request<{ items: Array<{ status?: { succeeded?: number } }> }>('GET', '/apis/batch/v1/namespaces/ai-agents/jobs')
    expect(jobs.items).toHaveLength(5)
    for (const j of jobs.items) expect(j.status?.succeeded).toBe(1)
    // The bundled recipe's smoke test ran there too (its db and web pods also start on the node,
    // which runs no postgres or nginx, so how often they restart is not a fixed number).
    const recipeJobs = await admin.request<{ items: Array<{ metadata: { name: string }; status?: { succeeded?: number } }> }>('GET', '/apis/batch/v1/namespaces/sandbox-recipes/jobs')
    expect(recipeJobs.items.map((j) => [j.metadata.name, j.status?.succeeded])).toEqual([['ai-agents-shop-test-smoke-ee0ca366-r1', 1]])
    expect(agent.stats().started).toBeGreaterThan(5)
    // Nothing Kinetic started locally outlives the command.
    expect(out).toMatch(/Stopped everything\.$/m)
  }, 200_000)
})
