// The console reads as the person using it, proven on a real kube-apiserver. Behind a proxy it
// impersonates them with its own ServiceAccount (knative/rbac/console.yaml) and the console-proxy
// component's ClusterRole, rendered from the shipped YAML: the person's own RBAC decides what
// they list, review, watch and follow. Without that ClusterRole the account may impersonate
// nobody. With a pasted token it is that token's identity, and that identity's RBAC, alone.
import { join } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { apiMessage, ForbiddenError, UnauthenticatedError } from '../../shared/core/errors.js'
import { KubeClient, kubeAs } from '../../shared/kube/client.js'
import type { Credential } from '../../shared/kube/port.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { loadManifests, ROOT } from '../knative/manifests.js'
import { eventually } from '../support/eventually.js'
import { startNodeAgent, type NodeAgent } from './node-agent.js'
import { describeCluster, useControlPlane } from './tier.js'
import { installCrds, readCrds } from '../../local/crds.js'

const A = 'console-a'
const B = 'console-b'
const manifests = loadManifests()
const ALICE: Credential = { kind: 'impersonate', user: 'alice', groups: ['console-people'] }
/** The API server's words for a refused call, or 'allowed'. */
const refusal = (call: Promise<unknown>) => call.then(() => 'allowed', (err: unknown) => apiMessage(err))

const aWorkflow = (namespace: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'wf', namespace }, spec: { steps: [{ name: 'a', agentRef: { name: 'x' } }] },
})

describeCluster('the console reads with the rights of the person using it (real RBAC, impersonation and tokens)', () => {
  const cp = useControlPlane({})
  let consoleConfig: KubeConfig
  let agent: NodeAgent | undefined

  beforeAll(async () => {
    const admin = cp.current.admin
    await installCrds(admin, readCrds(join(ROOT, 'crds'), (file) => file === 'workflows.purko.io.yaml'))
    // As shipped: kinetic-system and the console's account (no role in the base install).
    for (const m of manifests.filter((x) => ['namespace.yaml', 'rbac/console.yaml'].includes(x.file))) await admin.apply(m.doc)
    for (const ns of [A, B]) {
      await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
      await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns } })
    }
    // alice (a user) and bob (a ServiceAccount person) may read runs and approve steps in A only.
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'run-reader', namespace: A }, rules: [
      { apiGroups: ['purko.io'], resources: ['workflows'], verbs: ['get', 'list', 'watch', 'approve'] },
      { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list'] },
    ] })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'run-reader', namespace: A },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'run-reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }, { kind: 'ServiceAccount', name: 'bob', namespace: A }] })
    for (let i = 0; i < 100 && !(await admin.get('/apis/purko.io/v1alpha1')); i++) await new Promise((r) => setTimeout(r, 100))
    admin.forgetDiscovery()
    for (const ns of [A, B]) await admin.apply(aWorkflow(ns))
    consoleConfig = (await cp.current.serviceAccountKubeconfig('kinetic-system', 'console')).kubeConfig
  }, 60_000)
  afterAll(async () => {
    await agent?.stop()
  }, 30_000)

  it('without the console-proxy ClusterRole the console\'s account may impersonate nobody: reads, reviews and watches are refused (403)', async () => {
    const alice = kubeAs(consoleConfig, ALICE)
    await expect(alice.listWorkflowsIn(A, {})).rejects.toBeInstanceOf(ForbiddenError)
    await expect(alice.reviewSelfAccess([{ verb: 'get', group: 'purko.io', resource: 'workflows', namespace: A }])).rejects.toBeInstanceOf(ForbiddenError)
    await expect(alice.watchWorkflow(A, 'wf', '0', () => {})).rejects.toBeInstanceOf(ForbiddenError)
    // Nor may it read anything itself: the base install binds it no role.
    await expect(new KubeClient(consoleConfig).listWorkflowsIn(A, {})).rejects.toBeInstanceOf(ForbiddenError)
  })

  describe('with the console-proxy component applied', () => {
    beforeAll(async () => {
      const component = manifests.filter((m) => m.file === 'components/console-proxy/impersonator.yaml')
      expect(component.map((m) => m.kind)).toEqual(['ClusterRole', 'ClusterRoleBinding'])
      for (const m of component) await cp.current.admin.apply(m.doc)
      // As shipped it names nobody: the console may act as no one until the operator lists people.
      const role = component.find((m) => m.kind === 'ClusterRole')!.doc as { rules: Array<{ resources: string[]; resourceNames: string[] }> }
      await new Promise((r) => setTimeout(r, 1000))
      expect(await refusal(kubeAs(consoleConfig, ALICE).listWorkflowsIn(A, {}))).toMatch(/cannot impersonate resource "users"/)
      // The operator's overlay, as impersonator.yaml shows it: alice and her group.
      await cp.current.admin.apply({ ...role, rules: [
        { ...role.rules[0]!, resourceNames: ['alice'] },
        { ...role.rules[1]!, resourceNames: ['console-people'] },
      ] })
      // RBAC changes reach the authorizer through its informer: wait until alice's first read passes.
      await eventually('the impersonation grant', async () => kubeAs(consoleConfig, ALICE).listWorkflowsIn(A, {}).then(() => true, () => false), 15_000, 100)
    })

    it('may act as the people listed only: not as another user, not with an unlisted group, never as system:masters', async () => {
      for (const credential of [
        { kind: 'impersonate' as const, user: 'mallory', groups: [] },
        { kind: 'impersonate' as const, user: 'alice', groups: ['console-people', 'admins'] },
        { kind: 'impersonate' as const, user: 'alice', groups: ['system:masters'] },
      ]) {
        expect(await refusal(kubeAs(consoleConfig, credential).listWorkflowsIn(A, {})), JSON.stringify(credential)).toMatch(/cannot impersonate resource "(users|groups)"/)
      }
    })

    it('impersonating alice, lists her runs in A and is refused in B with a ForbiddenError', async () => {
      const alice = kubeAs(consoleConfig, ALICE)
      expect((await alice.listWorkflowsIn(A, {})).map((wf) => wf.metadata.name)).toEqual(['wf'])
      expect((await alice.getWorkflow(A, 'wf'))?.metadata.namespace).toBe(A)
      await expect(alice.getWorkflow(B, 'wf')).rejects.toBeInstanceOf(ForbiddenError)
      await expect(alice.listWorkflowsIn(B, {})).rejects.toBeInstanceOf(ForbiddenError)
      expect(await alice.whoAmI()).toMatchObject({ username: 'alice', groups: expect.arrayContaining(['console-people', 'system:authenticated']) })
    })

    it('reviews alice\'s own rights: approve yes in A, no in B', async () => {
      expect(await kubeAs(consoleConfig, ALICE).reviewSelfAccess([
        { verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: A, name: 'wf' },
        { verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: B, name: 'wf' },
        { verb: 'patch', group: 'purko.io', resource: 'workflows', namespace: A, name: 'wf' },
      ])).toEqual([true, false, false])
    })

    it('watches a run as alice and sees a status write; a watch in B is refused', async () => {
      const alice = kubeAs(consoleConfig, ALICE)
      const shown = (await alice.getWorkflow(A, 'wf'))!
      const seen: Array<Workflow | null> = []
      const handle = await alice.watchWorkflow(A, 'wf', String(shown.metadata.resourceVersion), (wf) => seen.push(wf))
      try {
        await new KubeClient(cp.current.adminKubeConfig()).patchWorkflowStatus(A, 'wf', String(shown.metadata.resourceVersion), { phase: 'Running' } as never)
        await eventually('the status write on the watch', () => seen.find((wf) => wf?.status?.phase === 'Running'), 15_000, 50)
      } finally {
        handle.stop()
      }
      await handle.done
      await expect(alice.watchWorkflow(B, 'wf', '0', () => {})).rejects.toBeInstanceOf(ForbiddenError)
    })

    it('reads the log of a step pod no node runs yet as empty: kube-apiserver answers it 204 No Content', async () => {
      await cp.current.admin.apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'unplaced-x', namespace: A, labels: { 'job-name': 'unplaced' } },
        spec: { automountServiceAccountToken: false, nodeSelector: { 'kinetic.dev/no-such-node': 'true' }, containers: [{ name: 'step', image: 'not-pulled' }] } })
      const status = await cp.current.admin.send('GET', `/api/v1/namespaces/${A}/pods/unplaced-x/log`)
      expect(status.status).toBe(204)
      const admin = new KubeClient(cp.current.adminKubeConfig())
      expect(await admin.readJobLog(A, 'unplaced')).toBe('')
      expect(await admin.readStepReport(A, 'unplaced', 'log')).toEqual({ text: '' })
    })

    it('follows a running pod\'s log as alice through the API server, to the end of the container', async () => {
      agent = await startNodeAgent({
        kubeConfig: cp.current.adminKubeConfig(),
        command: () => ({ command: process.execPath, args: ['-e', 'let i = 0; const t = setInterval(() => { console.log("line " + ++i); if (i === 5) clearInterval(t) }, 200)'], cwd: process.cwd() }),
      })
      await cp.current.admin.apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'step', namespace: A },
        spec: { automountServiceAccountToken: false, restartPolicy: 'Never', containers: [{ name: 'step', image: 'not-pulled' }] } })
      await eventually('the pod to run', async () => ((await cp.current.admin.get<KubeObject & { status?: { phase?: string } }>(`/api/v1/namespaces/${A}/pods/step`))?.status?.phase === 'Running'), 30_000, 100)
      let text = ''
      const handle = await kubeAs(consoleConfig, ALICE).followPodLog(A, 'step', {}, (chunk) => { text += chunk })
      await handle.done
      expect(text).toBe('line 1\nline 2\nline 3\nline 4\nline 5\n')
    }, 60_000)
  })

  it('with a ServiceAccount person\'s token, it is that person alone: whoAmI names them and their RBAC decides', async () => {
    const { token } = await cp.current.serviceAccountKubeconfig(A, 'bob')
    const bob = kubeAs(consoleConfig, { kind: 'token', token })
    expect((await bob.whoAmI()).username).toBe(`system:serviceaccount:${A}:bob`)
    expect((await bob.listWorkflowsIn(A, {})).map((wf) => wf.metadata.name)).toEqual(['wf'])
    await expect(bob.getWorkflow(B, 'wf')).rejects.toBeInstanceOf(ForbiddenError)
    expect(await bob.reviewSelfAccess([
      { verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: A },
      { verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: B },
    ])).toEqual([true, false])
  })

  it('with a token the API server does not accept (expired, revoked), reads fail as UnauthenticatedError, which the console answers with sign-in again', async () => {
    const stale = kubeAs(consoleConfig, { kind: 'token', token: 'not-a-token-the-server-issued' })
    await expect(stale.listWorkflowsIn(A, {})).rejects.toBeInstanceOf(UnauthenticatedError)
  })
})
