// The console's pages with a person's real rights on a real kube-apiserver (the cluster tier):
// someone who may read runs and agents in one namespace only gets the per-namespace fallback
// and a note naming the namespace refused, and the approve-promotion button only where RBAC
// grants `approve` on the Agent.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import type { ConsoleRequest } from '../../../shared/console/context.js'
import { agentPage } from '../../../shared/console/pages/agents.js'
import { workflowListPage } from '../../../shared/console/pages/workflows.js'
import { ForbiddenError } from '../../../shared/core/errors.js'
import { kubeAs } from '../../../shared/kube/client.js'
import { ROOT } from '../../knative/manifests.js'
import { describeCluster, useControlPlane } from '../../cluster/tier.js'
import { configOf, NOW, rowsOf, textOf } from './support.js'

const A = 'pages-a'
const B = 'pages-b'

const aWorkflow = (namespace: string, name: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace }, spec: { steps: [{ name: 'a', agentRef: { name: 'x' } }] },
})
const anAgent = (namespace: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'ready', namespace },
  spec: { model: { provider: 'offline', name: 'scripted' }, shuHaRi: { level: 'shu' } },
})
const waitingStatus = {
  shuHaRi: {
    currentLevel: 'shu', readyForPromotion: true,
    promotionProgress: { nextLevel: 'ha', actionsCompleted: 60, actionsRequired: 50, successRate: 1, successRateRequired: 0.95, daysInLevel: 20, daysRequired: 14, incidentFreeStreak: 60, streakRequired: 20, approvals: 0, approvalsRequired: 1 },
  },
}

describeCluster('console pages with real RBAC', () => {
  const cp = useControlPlane({})
  let bobToken = ''

  beforeAll(async () => {
    const admin = cp.current.admin
    const yaml = await import('yaml')
    for (const crd of ['workflows.purko.io.yaml', 'agents.purko.io.yaml']) {
      await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', yaml.parse(readFileSync(join(ROOT, 'crds', crd), 'utf8')))
    }
    for (const ns of [A, B]) {
      await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
      await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns } })
    }
    // bob may read runs and agents and approve promotions in A only.
    await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'bob', namespace: A } })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'reader', namespace: A }, rules: [
      { apiGroups: ['purko.io'], resources: ['workflows', 'agents'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['purko.io'], resources: ['agents'], verbs: ['approve'] },
      { apiGroups: [''], resources: ['events'], verbs: ['list'] },
    ] })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'reader', namespace: A },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' }, subjects: [{ kind: 'ServiceAccount', name: 'bob', namespace: A }] })
    for (let i = 0; i < 100 && !(await admin.get('/apis/purko.io/v1alpha1')); i++) await new Promise((r) => setTimeout(r, 100))
    admin.forgetDiscovery()
    for (const ns of [A, B]) {
      await admin.apply(aWorkflow(ns, `run-in-${ns}`))
      await admin.apply(anAgent(ns))
      await admin.request('PATCH', `/apis/purko.io/v1alpha1/namespaces/${ns}/agents/ready/status`, { status: waitingStatus }, 'application/merge-patch+json')
    }
    bobToken = (await cp.current.serviceAccountKubeconfig(A, 'bob')).token
  }, 90_000)

  const asBob = (path: string): ConsoleRequest => ({
    person: { mode: 'token', name: `system:serviceaccount:${A}:bob`, groups: [], credential: { kind: 'token', token: bobToken } },
    kube: kubeAs(cp.current.adminKubeConfig(), { kind: 'token', token: bobToken }),
    now: NOW,
    config: configOf({ namespaces: [A, B], actions: true }),
    url: new URL(path, 'http://console.test'),
    assetUrl: () => '',
  })

  it('lists the runs of the namespace bob may read and names the one refused', async () => {
    const page = await workflowListPage(asBob('/workflows'))
    expect(rowsOf(page.body, 'Workflow runs').map((r) => r.slice(0, 2))).toEqual([[`run-in-${A}`, A]])
    expect(textOf(page.body)).toContain(`You may not list Workflows across all namespaces; showing the configured namespaces you may read. You may not see Workflows in namespace ${B}.`)
  })

  it('offers bob the approve-promotion button where RBAC grants approve', async () => {
    const page = await agentPage(asBob(`/agents/${A}/ready`), A, 'ready')
    expect(page.body.html).toContain(`action="/actions/agents/${A}/ready/approve-promotion"`)
    // In B bob may not even read the Agent: the page handler's error becomes the 403 page.
    await expect(agentPage(asBob(`/agents/${B}/ready`), B, 'ready')).rejects.toBeInstanceOf(ForbiddenError)
  })
})
