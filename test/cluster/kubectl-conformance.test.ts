// The kubectl commands the README and docs show, typed against the real kube-apiserver (with the
// controller manager) and against the embedded API server: what a person reads must be the same,
// once ages, times, uids and resourceVersions are set aside (readable()). Where the embedded
// server differs on purpose, the test says so and asserts both sides of the difference.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { readable } from './kubectl.js'
import { describeKubectl, kubectlVersion, useKubectlSides, type SidePair } from './kubectl-sides.js'

const ROOT = join(import.meta.dirname, '../..')
const NS = 'conformance'
const CRD_FILES = ['agentautonomypolicies', 'agents', 'llmproviders', 'mcpservers', 'memoryproviders', 'workflowrecipepolicies', 'workflowrecipes', 'workflows']
  .map((p) => join(ROOT, 'crds', `${p}.purko.io.yaml`))

describeKubectl(`kubectl ${kubectlVersion} as the README shows it: embedded vs kube-apiserver`, () => {
  const sides = useKubectlSides({ controllerManager: true })
  const dir = mkdtempSync(join(tmpdir(), 'kinetic-conformance-'))
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text)
    return join(dir, name)
  }
  // The bundled example's Agents and Workflow, in this test's namespace.
  const example = (name: string) => readFileSync(join(ROOT, 'examples', 'local', name), 'utf8').replaceAll('namespace: ai-agents', `namespace: ${NS}`)
  const manifests = mkdtempSync(join(tmpdir(), 'kinetic-conformance-manifests-'))
  writeFileSync(join(manifests, '10-agents.yaml'), example('10-agents.yaml'))
  writeFileSync(join(manifests, '20-workflow.yaml'), example('20-workflow.yaml'))

  /** Runs the command on both sides and expects the same exit code and the same text. */
  async function same(args: string[], opts: { input?: string } = {}): Promise<SidePair> {
    const pair = await sides.both(args, opts)
    const seen = (r: SidePair['real']) => ({ code: r.code, stdout: readable(r.stdout), stderr: readable(r.stderr) })
    expect(seen(pair.local), `kubectl ${args.join(' ')}`).toEqual(seen(pair.real))
    return pair
  }

  it('installs the CRDs and waits for them: kubectl apply -f crds/..., kubectl wait --for=condition=Established', async () => {
    await same(['apply', ...CRD_FILES.flatMap((f) => ['-f', f])])
    await same(['wait', '--for=condition=Established', 'crd/mcpservers.purko.io', '--timeout=60s'])
    await same(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=60s'])
  }, 90_000)

  it('lists the Kinetic kinds with their short names and verbs, and nothing the real server does not: kubectl api-resources', async () => {
    await same(['api-resources', '--api-group=purko.io'])
    await same(['api-resources', '--api-group=purko.io', '-o', 'wide'])
    await same(['api-resources', '--namespaced=false', '--api-group=rbac.authorization.k8s.io'])
    // The embedded server serves a subset of the built-in kinds: every line it prints is the real server's.
    const { real, local } = await sides.both(['api-resources', '--no-headers'])
    const rows = (text: string) => text.trim().split('\n').map((l) => l.trim().split(/\s+/).join(' '))
    expect(rows(real.stdout)).toEqual(expect.arrayContaining(rows(local.stdout)))
    expect(rows(local.stdout)).toContain('workflows wf purko.io/v1alpha1 true Workflow')
  }, 60_000)

  it('creates the namespace and applies the example, then finds nothing to change: kubectl create namespace, kubectl apply -f', async () => {
    await same(['create', 'namespace', NS])
    await same(['apply', '-f', manifests])
    await same(['apply', '-f', manifests])
  }, 60_000)

  it.each([
    `get ag -n ${NS}`,
    'get workflows -A',
    `get wf -n ${NS} -o wide`,
    `get ag,wf -n ${NS}`,
    `get ag planner -n ${NS} -o jsonpath={.spec.model.name}`,
    `get ag planner -n ${NS} -o yaml`,
    `get wf release-notes -n ${NS} -o json`,
    `get sa,role,rolebinding -l purko.io/agent=writer -n ${NS}`,
    'get aap,llm,mcp,mem,wr -A',
    'get wrp',
    `get ag nope -n ${NS}`,
    `describe ag planner -n ${NS}`,
    `describe wf release-notes -n ${NS}`,
    'explain wr.spec',
    'explain agent.spec.model',
  ])('kubectl %s prints the same', async (line: string) => {
    await same(line.split(' '))
  }, 30_000)

  it('annotates, labels and patches, and waits for the change: kubectl annotate, label, patch --type=merge, wait --for=jsonpath', async () => {
    await same(['annotate', 'ag', 'planner', '-n', NS, 'kinetic.dev/reset-cost=INC-42: budget renewed'])
    await same(['label', 'ag', 'planner', '-n', NS, 'team=a'])
    await same(['label', 'namespace', NS, 'kinetic.dev/llm-credentials=enabled'])
    await same(['patch', 'wf', 'release-notes', '-n', NS, '--type=merge', '-p', '{"spec":{"parallelism":3}}'])
    await same(['wait', '--for=jsonpath={.spec.parallelism}=3', 'wf/release-notes', '-n', NS, '--timeout=10s'])
    await same(['get', 'ag', 'planner', '-n', NS, '-o', 'jsonpath={.metadata.annotations.kinetic\\.dev/reset-cost} {.metadata.labels.team}'])
  }, 60_000)

  it('watches a change arrive: kubectl get workflows -w', async () => {
    const watches = [sides.real.start(['get', 'wf', '-n', NS, '-w']), sides.local.start(['get', 'wf', '-n', NS, '-w'])]
    for (const w of watches) await waitFor(() => w.output().includes('release-notes'))
    await same(['patch', 'wf', 'release-notes', '-n', NS, '--type=merge', '-p', '{"spec":{"parallelism":4}}'])
    for (const w of watches) await waitFor(() => w.output().split('\n').filter((l) => l.startsWith('release-notes')).length >= 2)
    const [real, local] = await Promise.all(watches.map((w) => w.stop()))
    expect(readable(local?.stdout ?? '')).toEqual(readable(real?.stdout ?? ''))
  }, 60_000)

  it('shows what an apply would change, and nothing for what is applied already: kubectl diff', async () => {
    const changed = file('agents-warmer.yaml', example('10-agents.yaml').replace('temperature: 0.2', 'temperature: 0.7'))
    const { real } = await same(['diff', '-f', changed])
    expect(real.code).toBe(1)
    expect(real.stdout).toContain('+    temperature: 0.7')
    await same(['diff', '-f', join(manifests, '10-agents.yaml')])
  }, 60_000)

  it('moves from client-side to server-side apply, with conflicts for another manager: kubectl apply --server-side', async () => {
    const warmer = file('agents-ssa.yaml', example('10-agents.yaml').replace('temperature: 0.2', 'temperature: 0.7'))
    await same(['apply', '--server-side', '-f', warmer])
    await same(['get', 'ag', 'planner', '-n', NS, '-o', 'jsonpath={.spec.model.temperature}'])
    // Entries applied in the same second are ordered by time, which two servers cross at different moments.
    const managers = async () => {
      const { real, local } = await sides.both(['get', 'ag', 'planner', '-n', NS, '-o', 'jsonpath={.metadata.managedFields[*].manager}'])
      return [real, local].map((r) => r.stdout.split(' ').sort())
    }
    const [realManagers, localManagers] = await managers()
    expect(localManagers).toEqual(realManagers)
    expect(realManagers).toEqual(['kubectl', 'kubectl-annotate', 'kubectl-label', 'kubectl-last-applied'])
    const hotter = file('agents-other.yaml', example('10-agents.yaml').replace('temperature: 0.2', 'temperature: 0.9'))
    const { real } = await same(['apply', '--server-side', '--field-manager=other', '-f', hotter])
    expect(real.stderr).toContain('Apply failed with 1 conflict: conflict with "kubectl": .spec.model.temperature')
    await same(['apply', '--server-side', '--field-manager=other', '--force-conflicts', '-f', hotter])
    await same(['get', 'ag', '-n', NS, '-o', 'jsonpath={range .items[*]}{.metadata.name} {.spec} {.metadata.annotations}{"\\n"}{end}'])
  }, 60_000)

  it('lists Events and shows them on the object: kubectl events, kubectl get events, kubectl describe', async () => {
    // describe finds an object's Events by its uid, which each server gave it.
    for (const side of [sides.real, sides.local]) {
      const uid = (await side.run(['get', 'ag', 'planner', '-n', NS, '-o', 'jsonpath={.metadata.uid}'])).stdout
      const event = {
        apiVersion: 'v1', kind: 'Event', metadata: { name: 'planner.configured', namespace: NS },
        involvedObject: { apiVersion: 'purko.io/v1alpha1', kind: 'Agent', name: 'planner', namespace: NS, uid },
        reason: 'Configured', message: 'Model claude-sonnet-4-6 configured', type: 'Normal', count: 1,
        firstTimestamp: '2026-01-01T00:00:00Z', lastTimestamp: '2026-01-01T00:00:00Z', source: { component: 'agent-changed' },
      }
      expect(await side.run(['create', '-f', '-'], { input: JSON.stringify(event) })).toMatchObject({ code: 0, stdout: 'event/planner.configured created\n' })
    }
    await same(['events', '-n', NS])
    await same(['events', '-n', NS, '--for', 'agent/planner'])
    await same(['get', 'events', '-n', NS])
    const { real } = await same(['describe', 'ag', 'planner', '-n', NS])
    expect(real.stdout).toMatch(/Normal\s+Configured\s+\S+\s+agent-changed\s+Model claude-sonnet-4-6 configured/)
  }, 60_000)

  it('reads a pod log: kubectl logs, kubectl logs -f (a pod no node runs has none, and -f returns at once)', async () => {
    await same(['logs', 'nope', '-n', NS])
    await same(['create', '-f', file('pod.yaml', `apiVersion: v1\nkind: Pod\nmetadata: { name: waiting, namespace: ${NS} }\nspec:\n  restartPolicy: Never\n  containers: [{ name: executor, image: busybox }]\n`)])
    await same(['logs', 'waiting', '-n', NS])
    await same(['logs', '-f', 'waiting', '-n', NS])
  }, 60_000)

  it('follows the log of a pod the local Job runner runs until it ends; a real cluster needs a kubelet for that (deliberate difference)', async () => {
    const pod = file('ran.yaml', `apiVersion: v1\nkind: Pod\nmetadata: { name: ran, namespace: ${NS} }\nspec:\n  nodeName: kinetic-local\n  restartPolicy: Never\n  containers: [{ name: executor, image: busybox }]\n`)
    await same(['create', '-f', pod])
    sides.server.store.appendPodLog(NS, 'ran', 'starting\n')
    const follow = sides.local.start(['logs', '-f', 'ran', '-n', NS])
    await waitFor(() => follow.output().includes('starting'))
    sides.server.store.appendPodLog(NS, 'ran', 'OUTPUT:{"ok":true}\n')
    sides.server.store.patch({ apiVersion: 'v1', kind: 'Pod' }, NS, 'ran', { status: { phase: 'Succeeded' } }, { type: 'merge', subresource: 'status' })
    // kubectl ends by itself once the pod has ended.
    const local = await Promise.race([follow.exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('kubectl logs -f did not end with the pod')), 15_000))])
    expect(local).toMatchObject({ code: 0, stdout: 'starting\nOUTPUT:{"ok":true}\n' })
    // kube-apiserver asks the node's kubelet, and this test cluster has none.
    const real = await sides.real.run(['logs', '-f', 'ran', '-n', NS], { timeoutMs: 20_000 })
    expect(real.code).toBe(1)
    expect(real.stderr).toMatch(/^Error from server/)
  }, 60_000)

  it.each([
    `list workflows -n ${NS}`,
    'list workflows.purko.io -A',
    `get pods/log -n ${NS}`,
    `create pods --subresource=log -n ${NS}`,
    '* *',
    'get /healthz',
    'frob widgets',
  ])('answers kubectl auth can-i %s as the admin it is', async (line: string) => {
    const { real } = await same(['auth', 'can-i', ...line.split(' ')])
    expect(real.stdout.trim()).toMatch(/yes$/)
  }, 30_000)

  it('says who the caller is (kubectl auth whoami): the same groups; the embedded server\'s one user is its local admin (deliberate difference)', async () => {
    await same(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.groups}'])
    const { real, local } = await sides.both(['auth', 'whoami'])
    expect(real.stdout).toMatch(/^ATTRIBUTE\s+VALUE\nUsername\s+admin\nUID\s+admin-uid\nGroups\s+\[system:masters system:authenticated\]\n$/)
    expect(local.stdout).toMatch(/^ATTRIBUTE\s+VALUE\nUsername\s+kinetic-local-admin\nGroups\s+\[system:masters system:authenticated\]\n$/)
  }, 30_000)

  it('lists what the caller may do (kubectl auth can-i --list): everything; the real server adds its default discovery roles (deliberate difference)', async () => {
    const { real, local } = await sides.both(['auth', 'can-i', '--list', '-n', NS])
    expect(local.code).toBe(0)
    const lines = (text: string) => text.trim().split('\n').map((l) => l.trim().split(/\s+/).join(' '))
    expect(lines(local.stdout)).toEqual(['Resources Non-Resource URLs Resource Names Verbs', '*.* [] [] [*]', '[*] [] [*]'])
    expect(lines(real.stdout)).toEqual(expect.arrayContaining(lines(local.stdout)))
  }, 30_000)

  it('creates the RoleBindings the docs show, and a ServiceAccount: kubectl create rolebinding, create serviceaccount', async () => {
    await same(['create', 'rolebinding', 'team-a-runs', '-n', NS, '--clusterrole=kinetic-run-control-team', '--group=team-a'])
    await same(['create', 'serviceaccount', 'recipes-mcp-client', '-n', NS])
    await same(['create', 'rolebinding', 'agents-recipe-author', '-n', NS, '--clusterrole=kinetic-recipe-author', `--serviceaccount=${NS}:recipes-mcp-client`])
    await same(['get', 'rolebinding', 'team-a-runs', 'agents-recipe-author', '-n', NS, '-o', 'yaml'])
  }, 30_000)

  it('issues no token (kubectl create token): the embedded plane authenticates nobody, a cluster does (deliberate difference)', async () => {
    const { real, local } = await sides.both(['create', 'token', 'recipes-mcp-client', '-n', NS, '-o', 'jsonpath={.kind}'])
    expect(real).toMatchObject({ code: 0, stdout: 'TokenRequest' })
    expect(local).toMatchObject({ code: 1, stderr: 'error: failed to create token: the server could not find the requested resource\n' })
  }, 30_000)

  it('deletes with each cascade: kubectl delete --cascade=orphan|foreground|background', async () => {
    const ownedBy = async (name: string) => {
      for (const side of [sides.real, sides.local]) {
        const uid = (await side.run(['get', 'wf', 'release-notes', '-n', NS, '-o', 'jsonpath={.metadata.uid}'])).stdout
        const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, labels: { owned: 'yes' }, ownerReferences: [{ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'release-notes', uid, blockOwnerDeletion: true }] }, data: { a: 'b' } }
        expect((await side.run(['create', '-f', '-'], { input: JSON.stringify(cm) })).code).toBe(0)
      }
    }
    const workflow = join(manifests, '20-workflow.yaml')
    await ownedBy('kept')
    await same(['delete', 'wf', 'release-notes', '-n', NS, '--cascade=orphan'])
    await same(['get', 'cm', '-l', 'owned=yes', '-n', NS, '-o', 'jsonpath={range .items[*]}{.metadata.name}:{.metadata.ownerReferences}{"\\n"}{end}'])
    await same(['delete', 'cm', '-l', 'owned=yes', '-n', NS])
    for (const cascade of ['foreground', 'background']) {
      await same(['apply', '-f', workflow])
      await ownedBy(`owned-${cascade}`)
      await same(['delete', 'wf', 'release-notes', '-n', NS, `--cascade=${cascade}`])
      // A background delete leaves the dependents to the garbage collector, which runs a moment
      // later on a cluster (and at once here): whether kubectl still saw them go depends on when.
      const waited = await sides.both(['wait', '--for=delete', `cm/owned-${cascade}`, '-n', NS, '--timeout=30s'])
      expect([waited.real.code, waited.local.code]).toEqual([0, 0])
      await same(['get', 'cm', '-l', 'owned=yes', '-n', NS])
    }
  }, 120_000)
})

async function waitFor(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('Timed out waiting for kubectl output')
    await new Promise((r) => setTimeout(r, 100))
  }
}
