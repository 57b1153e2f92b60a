import type { Logger } from '../shared/log.js'
import { listAndWatch, type KubeHttp, type KubeObject } from '../local/knative/kube-http.js'
import type { LocalPlane } from '../local/plane.js'

/**
 * What `npm start` and `npm run demo` (scripts/start.ts) print as the example runs: each event
 * delivered and emitted, each step, run and recipe phase as it changes, the outputs of an ended
 * run and the history of a settled recipe. The demo's approvals are given here too, and the
 * run's end and the recipes' settling are promises the demo waits on.
 */

/** Prints a line to stdout. */
export const print = (line: string) => process.stdout.write(`${line}\n`)
/** The time since `t0`, as the progress lines start. */
export const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s`

// `/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/x` -> `workflows ai-agents/x`.
function shortSubject(subject: string | undefined, source: string): string {
  const m = subject ? /\/namespaces\/([^/]*)\/([^/]+)\/([^/]+)$/.exec(subject) : null
  if (m) return `${m[2]} ${m[1]}/${m[3]}`
  return subject ?? source
}

type StepStatus = { name: string; phase?: string; error?: string; message?: string }
type WorkflowObject = KubeObject & { status?: { phase?: string; message?: string; stepStatuses?: StepStatus[] } }
type HistoryEntry = { time?: string; from?: string; to?: string; reason?: string; revision?: number; message?: string }
type RecipeObject = KubeObject & { status?: { phase?: string; reason?: string; message?: string; currentRevision?: number; history?: HistoryEntry[] } }

const TERMINAL = new Set(['Succeeded', 'Failed', 'Cancelled', 'CompletedWithErrors'])
// Where a recipe stops on its own: Active is what the demo waits for, the others end it as failed.
const RECIPE_SETTLED = new Set(['Active', 'Failed', 'Rejected', 'RollbackFailed'])

function printHistory(recipe: RecipeObject): void {
  for (const h of recipe.status?.history ?? []) {
    const rev = h.revision ? ` r${h.revision}` : ''
    print(`  ${h.time ?? ''}  ${(h.from ?? '').padEnd(10)} -> ${(h.to ?? '').padEnd(10)}${rev}  ${h.reason ?? ''}${h.message ? `: ${h.message}` : ''}`)
  }
}

async function printOutputs(kube: KubeHttp, namespace: string, workflow: string): Promise<void> {
  const selector = encodeURIComponent(`purko.io/workflow=${workflow}`)
  const list = await kube.request<{ items: KubeObject[] }>('GET', `/api/v1/namespaces/${namespace}/configmaps?labelSelector=${selector}`)
  const shards = list.items.filter((cm) => cm.metadata?.name?.startsWith(`${workflow}-outputs`))
  if (shards.length === 0) {
    print(`  (no ${workflow}-outputs ConfigMap)`)
    return
  }
  for (const shard of shards.sort((a, b) => String(a.metadata?.name).localeCompare(String(b.metadata?.name)))) {
    print(`  ConfigMap ${namespace}/${shard.metadata?.name}:`)
    for (const [step, json] of Object.entries((shard.data ?? {}) as Record<string, string>)) {
      let shown = json
      try {
        const { _metrics: _m, ...rest } = JSON.parse(json) as Record<string, unknown>
        shown = JSON.stringify(rest)
      } catch {
        // not JSON: show as stored
      }
      print(`    ${step}: ${shown.length > 160 ? `${shown.slice(0, 157)}...` : shown}`)
    }
  }
}

/** Prints each event the emulated Knative delivers, and Kinetic's own events as they reach the Broker. */
export function printEvents(knative: LocalPlane['knative'], t0: number): void {
  knative.onDelivery((d) => {
    const outcome = d.outcome === 'delivered' ? '' : ` ${d.outcome.toUpperCase()}${d.error ? ` (${d.error})` : ''}`
    const retries = d.attempts > 1 ? ` after ${d.attempts} attempts` : ''
    print(`${since(t0)} event  ${d.event.type.padEnd(38)} ${shortSubject(d.event.subject, d.event.source).padEnd(44)} -> ${d.trigger} ${d.status}${retries}${outcome}`)
  })

  // Kinetic's own transition events have no Trigger; show them as they reach the Broker.
  knative.onIngress(({ event }) => {
    if (!event.type.startsWith('dev.kinetic.')) return
    const data = event.data && typeof event.data === 'object' ? (event.data as { message?: unknown }).message : undefined
    print(`${since(t0)} emit   ${event.type.padEnd(38)} ${shortSubject(event.subject, event.source).padEnd(44)}${typeof data === 'string' ? ` ${data}` : ''}`)
  })
}

/** What the progress of the example runs tells the demo. */
export interface Progress {
  onWorkflow(wf: WorkflowObject): Promise<void>
  onRecipe(recipe: RecipeObject): void
  /** Settles with the phase the example Workflow run ended in. */
  ended: Promise<string>
  /** Settles with the phase of every example recipe once all have settled. */
  recipesSettled: Promise<Map<string, string>>
  /** Each recipe's latest phase. */
  recipePhases: Map<string, string>
  /** The example recipes settled so far, with their phase. */
  settledRecipes: Map<string, string>
}

/**
 * Follows the example runs (`namespace/name` of the example Workflows and WorkflowRecipes):
 * prints what changes, approves the example run's approval gates, and settles `ended` and
 * `recipesSettled`.
 */
export function followExamples(kube: KubeHttp, t0: number, exampleWorkflows: string[], exampleRecipes: string[]): Progress {
  const recipePhases = new Map<string, string>()
  const settledRecipes = new Map<string, string>()
  let resolveRecipes!: (phases: Map<string, string>) => void
  const recipesSettled = new Promise<Map<string, string>>((r) => { resolveRecipes = r })
  if (exampleRecipes.length === 0) resolveRecipes(settledRecipes)

  const onRecipe = (recipe: RecipeObject) => {
    if (recipe.metadata?.deletionTimestamp) return
    const key = `${recipe.metadata?.namespace ?? 'default'}/${recipe.metadata?.name}`
    const phase = recipe.status?.phase
    if (!phase || recipePhases.get(key) === phase) return
    recipePhases.set(key, phase)
    const why = recipe.status?.reason ? ` (${recipe.status.reason}${recipe.status.message ? `: ${recipe.status.message}` : ''})` : ''
    print(`${since(t0)} recipe ${String(recipe.metadata?.name).padEnd(38)} ${phase}${why}`)
    if (!RECIPE_SETTLED.has(phase) || !exampleRecipes.includes(key) || settledRecipes.has(key)) return
    settledRecipes.set(key, phase)
    print(`History of WorkflowRecipe ${key}:`)
    printHistory(recipe)
    if (exampleRecipes.every((k) => settledRecipes.has(k))) resolveRecipes(settledRecipes)
  }
  const approved = new Set<string>()
  const phases = new Map<string, string>()
  let resolveEnd!: (phase: string) => void
  const ended = new Promise<string>((r) => { resolveEnd = r })

  const onWorkflow = async (wf: WorkflowObject) => {
    // A run being deleted (a cluster's leftover from an earlier demo) is not this run.
    if (wf.metadata?.deletionTimestamp) return
    const ns = wf.metadata?.namespace ?? 'default'
    const name = wf.metadata?.name ?? ''
    const key = `${ns}/${name}`
    for (const s of wf.status?.stepStatuses ?? []) {
      const phase = s.phase ?? 'Pending'
      const waiting = s.error?.startsWith('Waiting for') ? ` (${s.error})` : ''
      const label = `${phase}${waiting}`
      if (phases.get(`${key}/${s.name}`) !== label) {
        phases.set(`${key}/${s.name}`, label)
        print(`${since(t0)} step   ${`${name}/${s.name}`.padEnd(38)} ${label}`)
      }
      const gate = `purko.io/approve-${s.name}`
      if (exampleWorkflows.includes(key) && s.error?.startsWith('Waiting for human approval') && !approved.has(`${key}/${s.name}`)) {
        approved.add(`${key}/${s.name}`)
        print(`${since(t0)} approve ${name}/${s.name}: setting annotation ${gate}="true"`)
        await kube.mergePatch(`/apis/purko.io/v1alpha1/namespaces/${ns}/workflows/${name}`, { metadata: { annotations: { [gate]: 'true' } } })
      }
    }
    const phase = wf.status?.phase
    if (phase && phases.get(key) !== phase) {
      phases.set(key, phase)
      print(`${since(t0)} run    ${name.padEnd(38)} ${phase}${wf.status?.message ? ` (${wf.status.message})` : ''}`)
      if (TERMINAL.has(phase)) {
        print(`Outputs of ${key}:`)
        await printOutputs(kube, ns, name).catch((err: unknown) => print(`  could not read outputs: ${String(err)}`))
        if (exampleWorkflows.includes(key)) resolveEnd(phase)
      }
    }
  }
  return { onWorkflow, onRecipe, ended, recipesSettled, recipePhases, settledRecipes }
}

/**
 * Watches Workflows and WorkflowRecipes for `progress` until `signal` aborts. Workflows already
 * there when a watch starts are not this run's news; after a relist (410 Gone) every item is,
 * since changes may have been missed meanwhile. `started` settles once both watches have their
 * starting point; `watches` settle when they stop.
 */
export function watchProgress(kube: KubeHttp, progress: Progress, log: Logger, signal: AbortSignal): { started: Promise<void>; watches: Promise<void>[] } {
  const { onWorkflow, onRecipe } = progress
  let lists = 0
  let markWatching!: () => void
  const watchStarted = new Promise<void>((r) => { markWatching = r })
  const watching = listAndWatch(kube, '/apis/purko.io/v1alpha1/workflows', '', {
    async onList(items) {
      if (lists++ > 0) for (const wf of items) await onWorkflow(wf as WorkflowObject)
    },
    async onEvent(ev) {
      if (ev.type === 'ADDED' || ev.type === 'MODIFIED') await onWorkflow(ev.object as WorkflowObject)
    },
    synced: () => markWatching(),
    onError(err) {
      log.warn({ err: String(err) }, 'Progress watch failed; resuming')
    },
  }, signal)
  let recipeLists = 0
  let markRecipesWatching!: () => void
  const recipesWatchStarted = new Promise<void>((r) => { markRecipesWatching = r })
  const watchingRecipes = listAndWatch(kube, '/apis/purko.io/v1alpha1/workflowrecipes', '', {
    onList(items) {
      if (recipeLists++ > 0) for (const r of items) onRecipe(r as RecipeObject)
    },
    onEvent(ev) {
      if (ev.type === 'ADDED' || ev.type === 'MODIFIED') onRecipe(ev.object as RecipeObject)
    },
    synced: () => markRecipesWatching(),
    onError(err) {
      log.warn({ err: String(err) }, 'Recipe progress watch failed; resuming')
    },
  }, signal)
  return { started: Promise.all([watchStarted, recipesWatchStarted]).then(() => undefined), watches: [watching, watchingRecipes] }
}
