import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import type { KubeHttp, KubeObject } from '../local/knative/kube-http.js'
import type { LocalPlane } from '../local/plane.js'
import { print, since } from './start-progress.js'

/** The bundled example of `npm start` and `npm run demo` (scripts/start.ts): read, cleared from a cluster, applied. */

/** The objects of every YAML file of `dir`, in file name order. */
export function readExamples(dir: string): KubeObject[] {
  const out: KubeObject[] = []
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, name), 'utf8'))) {
      const v = doc.toJSON() as unknown
      if (v && typeof v === 'object' && !Array.isArray(v)) out.push(v as KubeObject)
    }
  }
  return out
}

/**
 * Deletes the example runs an earlier demo left on a cluster: the Workflows (waiting until they
 * are gone), then the WorkflowRecipes (each deleted by its own finalizer, within 60 s).
 */
export async function removeLeftoverExamples(kube: KubeHttp, t0: number, exampleWorkflows: string[], exampleRecipes: string[]): Promise<void> {
  for (const key of exampleWorkflows) {
    const [ns, name] = key.split('/') as [string, string]
    const path = `/apis/purko.io/v1alpha1/namespaces/${ns}/workflows/${name}`
    if (!(await kube.get(path))) continue
    print(`${since(t0)} delete workflow/${name} -n ${ns} (left by an earlier run)`)
    await kube.request('DELETE', `${path}?propagationPolicy=Foreground`)
    while (await kube.get(path)) await new Promise((wake) => setTimeout(wake, 250))
  }
  // A recipe is deleted by its own finalizer (the running functions remove its children first).
  for (const key of exampleRecipes) {
    const [ns, name] = key.split('/') as [string, string]
    const path = `/apis/purko.io/v1alpha1/namespaces/${ns}/workflowrecipes/${name}`
    if (!(await kube.get(path))) continue
    print(`${since(t0)} delete workflowrecipe/${name} -n ${ns} (left by an earlier run)`)
    await kube.request('DELETE', path)
    const deadline = Date.now() + 60_000
    while (await kube.get(path)) {
      if (Date.now() > deadline) throw new Error(`WorkflowRecipe ${key} was not deleted within 60 s`)
      await new Promise((wake) => setTimeout(wake, 250))
    }
  }
}

/** Waits up to 30 s for agent-changed to report each Agent's ServiceAccount in its status. */
export async function awaitIdentities(kube: LocalPlane['kube'], paths: readonly string[]): Promise<void> {
  const deadline = Date.now() + 30_000
  for (const path of paths) {
    while (Date.now() < deadline) {
      const agent = await kube.get(path) as { status?: { serviceAccountName?: string } } | null
      if (agent?.status?.serviceAccountName) break
      await new Promise((wake) => setTimeout(wake, 100))
    }
  }
}
