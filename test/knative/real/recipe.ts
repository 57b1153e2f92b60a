// A WorkflowRecipe on real Pods, on the install of kinetic.ts: its workloads run the released
// image (the only image this machine can serve a node; it has `node`), started in dependency
// order once each is Ready by its own probe, then the recipe's test Job fetches the web
// Service over the cluster network, and the recipe ends Active. Nothing of the emulation
// (local/workloads/) is involved: the Deployment controller, the kubelet's probes and the Job
// controller are the real ones.
import { expect, it } from 'vitest'
import type { KubeObject } from '../../../local/knative/kube-http.js'
import { eventually } from '../../support/eventually.js'
import { releasedImage } from './cluster-ip.js'
import type { KineticTier } from './kinetic.js'

const NS = 'ai-agents'
const TARGET = 'sandbox-recipes'

interface Condition { type: string; status: string; reason?: string; message?: string }
interface Recipe { status?: { phase?: string; conditions?: Condition[]; revision?: number } }

/** A tiny TCP "database" and an HTTP "web" that answers with the database address it was given. */
export function nodeRecipe(image: string): KubeObject {
  const security = { runAsUser: 65532, runAsGroup: 65532 }
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name: 'node-shop', namespace: NS },
    spec: {
      description: 'A web front end on a database, both the released image running node, with a smoke test.',
      version: '1.0.0',
      workloads: [
        {
          name: 'db', kind: 'Deployment', image, command: ['node', '-e'],
          // A probe's connection is reset as soon as it opens: the socket's error must not end the process.
          args: ["require('node:net').createServer((s) => { s.on('error', () => {}); s.end('db\\n') }).listen(5432)"],
          ports: [{ name: 'pg', port: 5432 }], security,
          readinessProbe: { tcpSocket: { port: 'pg' }, periodSeconds: 2 },
        },
        {
          name: 'web', kind: 'Deployment', dependsOn: ['db'], image, command: ['node', '-e'],
          args: ["require('node:http').createServer((q, r) => r.end('web on ' + process.env.DATABASE)).listen(8080)"],
          env: [{ name: 'DATABASE', value: '{{workloads.db.host}}:{{workloads.db.ports.pg}}' }],
          ports: [{ name: 'http', port: 80, targetPort: 8080 }], security,
          readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 2 },
        },
      ],
      tests: [{
        name: 'smoke', image, command: ['node', '-e'],
        // As a smoke test with curl --retry would: the Service's routes may lag its pod's readiness by a moment.
        args: ["(async () => { for (let i = 1; ; i++) { try { const r = await fetch(process.env.WEB_URL); const t = await r.text(); console.log('smoke: ' + t); process.exit(r.ok && t.includes(':5432') ? 0 : 1) } catch (e) { console.error('smoke: attempt ' + i + ': ' + e.message); if (i === 20) process.exit(1); await new Promise((s) => setTimeout(s, 1000)) } } })()"],
        env: [{ name: 'WEB_URL', value: '{{workloads.web.url}}' }],
        security, timeoutSeconds: 120,
      }],
    },
  }
}

/** Registers the recipe test; `tier()` is called once it runs (after Kinetic's install test). */
export function recipeOnKinetic(tier: () => KineticTier): void {
  it('a WorkflowRecipe reaches Active on real Pods: its workloads start in dependency order, Ready by their probes, and its smoke test Job reaches the web Service', async () => {
    const { admin } = tier()
    await admin.apply(nodeRecipe(await releasedImage(admin)), NS)
    const recipe = await eventually('WorkflowRecipe node-shop Active', async () => {
      const r = await admin.get<Recipe>(`/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes/node-shop`)
      const phase = r?.status?.phase
      if (phase === 'Failed' || phase === 'RolledBack') throw new Error(`node-shop ended ${phase}: ${JSON.stringify(r?.status?.conditions)}`)
      return phase === 'Active' ? r : undefined
    }, 300_000, 2000)
    expect(recipe?.status?.revision).toBe(1)
    const deployments = (await admin.get<{ items: Array<{ metadata: { name: string; creationTimestamp: string }; status?: { readyReplicas?: number } }> }>(
      `/apis/apps/v1/namespaces/${TARGET}/deployments?labelSelector=purko.io%2Frecipe%3Dnode-shop`))?.items ?? []
    // Children are named <recipe namespace>-<recipe>-<workload>-<hash> (spec §5).
    const byName = new Map(deployments.map((d) => [d.metadata.name.replace(/^ai-agents-node-shop-/, '').replace(/-[0-9a-f]{8}$/, ''), d]))
    expect([...byName.keys()].sort()).toEqual(['db', 'web'])
    expect([...byName.values()].every((d) => (d.status?.readyReplicas ?? 0) >= 1)).toBe(true)
    // web waited for db: it was created no earlier than db.
    expect(Date.parse(byName.get('web')!.metadata.creationTimestamp)).toBeGreaterThanOrEqual(Date.parse(byName.get('db')!.metadata.creationTimestamp))
    // The smoke test ran as a real Job whose pod fetched the web Service and saw the database address.
    const jobs = (await admin.get<{ items: Array<{ metadata: { name: string }; status?: { succeeded?: number } }> }>(
      `/apis/batch/v1/namespaces/${TARGET}/jobs?labelSelector=purko.io%2Frecipe%3Dnode-shop`))?.items ?? []
    expect(jobs.some((j) => (j.status?.succeeded ?? 0) >= 1)).toBe(true)
  }, 420_000)
}
