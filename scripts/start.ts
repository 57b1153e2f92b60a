// `npm start`: the embedded local plane plus the bundled example, serving until Ctrl-C.
// `npm run demo` (`--demo`): the same, but exits once the example Workflow run has ended and the
// example WorkflowRecipe has settled: 0 when the run Succeeded and the recipe is Active, 1 on a
// run Failed/Cancelled/CompletedWithErrors or a recipe Failed/Rejected/RollbackFailed, 2 on
// timeout (`--timeout <seconds>`, default 120).
// `--kubeconfig <file>` (or KINETIC_KUBECONFIG): the functions and the Knative emulation run
// locally against that cluster instead (crds/ and knative/'s RBAC installed there, each function
// as its own ServiceAccount, step Jobs on the cluster's nodes); `npm start` then applies no
// example, `npm run demo` applies it afresh. `--executor-image <ref>` sets the step Jobs' image.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { pino } from 'pino'
import { parseAllDocuments } from 'yaml'
import { REPO_ROOT } from '../local/jobs/step-process.js'
import { listAndWatch, type KubeHttp, type KubeObject } from '../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane } from '../local/plane.js'

interface Args {
  demo: boolean; timeoutSeconds: number; port: number; pingSeconds: number | undefined
  kubeconfig: string | undefined; executorImage: string | undefined
}

function parseArgs(argv: string[], env: NodeJS.ProcessEnv): Args {
  const args: Args = {
    demo: false, timeoutSeconds: 120, port: 0, pingSeconds: undefined,
    kubeconfig: env.KINETIC_KUBECONFIG || undefined, executorImage: undefined,
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const value = () => {
      const v = Number(argv[++i])
      if (!Number.isFinite(v) || v < 0) throw new Error(`${a} needs a non-negative number`)
      return v
    }
    if (a === '--demo') args.demo = true
    else if (a === '--timeout') args.timeoutSeconds = value()
    else if (a === '--port') args.port = value()
    else if (a === '--ping-seconds') args.pingSeconds = value()
    else if (a === '--kubeconfig' || a === '--executor-image') {
      const v = argv[++i]
      if (!v || v.startsWith('--')) throw new Error(`${a} needs a value`)
      if (a === '--kubeconfig') args.kubeconfig = v
      else args.executorImage = v
    } else throw new Error(`Unknown option ${a} (known: --demo, --timeout <s>, --port <n>, --ping-seconds <s>, --kubeconfig <file>, --executor-image <ref>)`)
  }
  // The demo fast-forwards the resync PingSource so a lost event costs seconds, not a minute.
  if (args.demo && args.pingSeconds === undefined) args.pingSeconds = 5
  return args
}

const print = (line: string) => process.stdout.write(`${line}\n`)
const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s`

function readExamples(dir: string): KubeObject[] {
  const out: KubeObject[] = []
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, name), 'utf8'))) {
      const v = doc.toJSON() as unknown
      if (v && typeof v === 'object' && !Array.isArray(v)) out.push(v as KubeObject)
    }
  }
  return out
}

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

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2), process.env)
  const t0 = Date.now()
  const root = REPO_ROOT
  const logFile = join(root, '.kinetic', 'logs', 'plane.log')
  mkdirSync(join(root, '.kinetic', 'logs'), { recursive: true })
  const log = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { function: 'local-plane' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: logFile, sync: true }))

  let cluster: { kubeConfig: KubeConfig; kubeconfigPath: string } | undefined
  if (args.kubeconfig) {
    const path = resolve(args.kubeconfig)
    if (!existsSync(path)) {
      print(`No kubeconfig at ${path}`)
      return 1
    }
    const kubeConfig = new KubeConfig()
    try {
      kubeConfig.loadFromFile(path)
    } catch (err) {
      print(`Could not read the kubeconfig ${path}: ${err instanceof Error ? err.message : String(err)}`)
      return 1
    }
    if (!kubeConfig.getCurrentCluster()) {
      print(`The kubeconfig ${path} has no current context with a cluster`)
      return 1
    }
    cluster = { kubeConfig, kubeconfigPath: path }
  }

  const what = cluster ? `the local plane against ${cluster.kubeConfig.getCurrentCluster()?.server} (context ${cluster.kubeConfig.getCurrentContext()})` : 'the local plane'
  print(args.demo ? `Kinetic demo: starting ${what}...` : `Kinetic: starting ${what}...`)
  let plane: LocalPlane
  try {
    plane = await startLocalPlane({
      root,
      port: args.port,
      log,
      ...(cluster ? { cluster } : {}),
      ...(args.executorImage ? { executorImage: args.executorImage } : {}),
      ...(args.pingSeconds !== undefined ? { pingIntervalMs: args.pingSeconds * 1000 } : {}),
    })
  } catch (err) {
    print(`Could not start the local plane: ${err instanceof Error ? err.message : String(err)}`)
    print(`Details: ${relative(process.cwd(), logFile)}`)
    return 1
  }

  let stopping: Promise<void> | undefined
  const stop = () => (stopping ??= plane.stop())
  const kubeconfig = relative(process.cwd(), plane.kubeconfigPath) || plane.kubeconfigPath
  print(`  API server  ${plane.server}${cluster ? ' (existing cluster: crds/ and the RBAC of knative/ installed)' : ''}`)
  print(`  kubeconfig  ${kubeconfig}`)
  for (const fn of plane.functions.values()) {
    print(`  function    ${fn.name.padEnd(18)} ${fn.url}  (log: ${relative(process.cwd(), fn.logFile)}${fn.identity ? `; as ${fn.identity}` : ''})`)
  }
  for (const fn of plane.functions.values()) {
    if (!fn.mcp) continue
    const auth = fn.mcp.auth === 'none' ? 'none locally: every call allowed as anonymous' : `${fn.mcp.auth}: send Authorization: Bearer <a ServiceAccount token of the cluster>`
    print(`  recipes MCP ${fn.mcp.url}  (auth: ${auth}${cluster ? '' : '; agents reach it as MCPServer ai-agents/recipes'})`)
  }
  const webhook = plane.functions.get('webhook-trigger')
  if (webhook) print(`  webhooks    POST ${webhook.url}/api/trigger/<namespace>/<template>  (HMAC-signed with the template's spec.trigger.webhook.secret)`)
  const runControl = plane.functions.get('run-control')
  if (runControl) print(`  run control ${runControl.url}/api/...  (kinetic approve|deny|cancel|rerun|run --server ${runControl.url}${cluster ? '' : '; auth none locally'})`)
  const consoleFn = plane.functions.get('console')
  if (consoleFn) print(`  console     ${consoleFn.url}/workflows  (open it in a browser; ${cluster ? 'sign in with a bearer token of the cluster; you see and do what it may' : 'you are the local admin, actions go to run control'})`)
  if (cluster) {
    const image = args.executorImage ?? 'the Services\' KINETIC_EXECUTOR_IMAGE (kinetic)'
    print(`  step Jobs   run on the cluster's nodes with image ${image}${args.executorImage ? '' : '; set --executor-image to an image the nodes can pull'}`)
  }
  print(`  plane log   ${relative(process.cwd(), logFile)}`)
  print('')
  print('Watch it:')
  print(`  kubectl --kubeconfig ${kubeconfig} get workflows -A -w`)
  print(`  KUBECONFIG=${kubeconfig} npx kinetic status <workflow> -n ai-agents --watch`)
  print(`  kubectl --kubeconfig ${kubeconfig} get jobs,pods -n ai-agents`)
  print(`  kubectl --kubeconfig ${kubeconfig} get workflowrecipes -A -w`)
  print(`  kubectl --kubeconfig ${kubeconfig} get statefulsets,deployments,services,jobs,pods -n sandbox-recipes`)
  print('')

  plane.knative.onDelivery((d) => {
    const outcome = d.outcome === 'delivered' ? '' : ` ${d.outcome.toUpperCase()}${d.error ? ` (${d.error})` : ''}`
    const retries = d.attempts > 1 ? ` after ${d.attempts} attempts` : ''
    print(`${since(t0)} event  ${d.event.type.padEnd(38)} ${shortSubject(d.event.subject, d.event.source).padEnd(44)} -> ${d.trigger} ${d.status}${retries}${outcome}`)
  })

  // Kinetic's own transition events have no Trigger; show them as they reach the Broker.
  plane.knative.onIngress(({ event }) => {
    if (!event.type.startsWith('dev.kinetic.')) return
    const data = event.data && typeof event.data === 'object' ? (event.data as { message?: unknown }).message : undefined
    print(`${since(t0)} emit   ${event.type.padEnd(38)} ${shortSubject(event.subject, event.source).padEnd(44)}${typeof data === 'string' ? ` ${data}` : ''}`)
  })

  const examplesDir = join(root, 'examples', 'local')
  const examples = readExamples(examplesDir)
  const exampleWorkflows = examples.filter((o) => o.kind === 'Workflow').map((o) => `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name}`)
  const exampleRecipes = examples.filter((o) => o.kind === 'WorkflowRecipe').map((o) => `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name}`)
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
        await plane.kube.mergePatch(`/apis/purko.io/v1alpha1/namespaces/${ns}/workflows/${name}`, { metadata: { annotations: { [gate]: 'true' } } })
      }
    }
    const phase = wf.status?.phase
    if (phase && phases.get(key) !== phase) {
      phases.set(key, phase)
      print(`${since(t0)} run    ${name.padEnd(38)} ${phase}${wf.status?.message ? ` (${wf.status.message})` : ''}`)
      if (TERMINAL.has(phase)) {
        print(`Outputs of ${key}:`)
        await printOutputs(plane.kube, ns, name).catch((err: unknown) => print(`  could not read outputs: ${String(err)}`))
        if (exampleWorkflows.includes(key)) resolveEnd(phase)
      }
    }
  }

  // On a cluster only the demo applies the example, and afresh: a run left by an earlier demo
  // would otherwise be Succeeded already and never change.
  const applyExamples = !cluster || args.demo
  if (cluster && args.demo) {
    try {
      for (const key of exampleWorkflows) {
        const [ns, name] = key.split('/') as [string, string]
        const path = `/apis/purko.io/v1alpha1/namespaces/${ns}/workflows/${name}`
        if (!(await plane.kube.get(path))) continue
        print(`${since(t0)} delete workflow/${name} -n ${ns} (left by an earlier run)`)
        await plane.kube.request('DELETE', `${path}?propagationPolicy=Foreground`)
        while (await plane.kube.get(path)) await new Promise((r) => setTimeout(r, 250))
      }
      // A recipe is deleted by its own finalizer (the running functions remove its children first).
      for (const key of exampleRecipes) {
        const [ns, name] = key.split('/') as [string, string]
        const path = `/apis/purko.io/v1alpha1/namespaces/${ns}/workflowrecipes/${name}`
        if (!(await plane.kube.get(path))) continue
        print(`${since(t0)} delete workflowrecipe/${name} -n ${ns} (left by an earlier run)`)
        await plane.kube.request('DELETE', path)
        const deadline = Date.now() + 60_000
        while (await plane.kube.get(path)) {
          if (Date.now() > deadline) throw new Error(`WorkflowRecipe ${key} was not deleted within 60 s`)
          await new Promise((r) => setTimeout(r, 250))
        }
      }
    } catch (err) {
      print(`Could not remove the example run left by an earlier demo: ${err instanceof Error ? err.message : String(err)}`)
      await stop()
      return 1
    }
  }
  const watchStop = new AbortController()
  // Workflows already there when the watch starts are not this run's news; after a relist
  // (410 Gone) every item is, since changes may have been missed meanwhile.
  let lists = 0
  let markWatching!: () => void
  const watchStarted = new Promise<void>((r) => { markWatching = r })
  const watching = listAndWatch(plane.kube, '/apis/purko.io/v1alpha1/workflows', '', {
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
  }, watchStop.signal)
  let recipeLists = 0
  let markRecipesWatching!: () => void
  const recipesWatchStarted = new Promise<void>((r) => { markRecipesWatching = r })
  const watchingRecipes = listAndWatch(plane.kube, '/apis/purko.io/v1alpha1/workflowrecipes', '', {
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
  }, watchStop.signal)
  // Nothing is applied before the watches have their starting point, so no change of this run is missed.
  await Promise.all([watchStarted, recipesWatchStarted])

  const shutdown = async (code: number) => {
    watchStop.abort()
    await stop()
    await Promise.all([watching, watchingRecipes])
    const s = plane.knative.stats()
    print(`Events: ${s.delivered} delivered, ${s.retried} retried, ${s.deadLettered} dead-lettered, ${s.dropped} dropped. Stopped everything.`)
    return code
  }

  const appliedAgents: string[] = []
  for (const obj of applyExamples ? examples : []) {
    try {
      // A step waits for its agent's ServiceAccount, and a waiting step is re-driven by the next
      // resync tick; waiting here for agent-changed saves the run that tick.
      if (obj.kind === 'Workflow' && plane.functions.has('agent-changed')) await awaitIdentities(plane.kube, appliedAgents.splice(0))
      await plane.kube.apply(obj)
      if (obj.kind === 'Agent') appliedAgents.push(`/apis/purko.io/v1alpha1/namespaces/${obj.metadata?.namespace ?? 'default'}/agents/${obj.metadata?.name}`)
    } catch (err) {
      print(`Could not apply ${String(obj.kind)}/${obj.metadata?.name} from ${relative(process.cwd(), examplesDir)}: ${err instanceof Error ? err.message : String(err)}`)
      return shutdown(1)
    }
    print(`${since(t0)} apply  ${String(obj.kind).toLowerCase()}/${obj.metadata?.name}${obj.metadata?.namespace ? ` -n ${obj.metadata.namespace}` : ''}`)
  }
  if (!applyExamples) print(`Serving. Apply the bundled example with kubectl --kubeconfig ${kubeconfig} apply -f ${relative(process.cwd(), examplesDir)}/ or your own manifests; Ctrl-C stops the local processes (what was installed on the cluster stays).`)

  if (args.demo) {
    const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), args.timeoutSeconds * 1000).unref())
    const interrupted = new Promise<'interrupted'>((r) => {
      process.once('SIGINT', () => r('interrupted'))
      process.once('SIGTERM', () => r('interrupted'))
    })
    // Both must end: the Workflow run, and every example recipe settled.
    const both = Promise.all([ended, recipesSettled]).then(([run, recipes]) => ({ run, recipes }))
    const result = await Promise.race([both, timeout, interrupted])
    if (result === 'timeout') {
      const waiting = exampleRecipes.filter((k) => !settledRecipes.has(k)).map((k) => `recipe ${k} ${recipePhases.get(k) ?? 'without status'}`)
      print(`Demo timed out after ${args.timeoutSeconds} s${waiting.length > 0 ? ` (${waiting.join(', ')})` : ''} (see ${relative(process.cwd(), logFile)} and .kinetic/logs/).`)
      return shutdown(2)
    }
    if (result === 'interrupted') {
      print('Interrupted.')
      return shutdown(130)
    }
    const failedRecipes = [...result.recipes].filter(([, phase]) => phase !== 'Active')
    if (result.run === 'Succeeded' && failedRecipes.length === 0) {
      print(`Demo Succeeded in ${((Date.now() - t0) / 1000).toFixed(1)} s: the run Succeeded${exampleRecipes.length > 0 ? ` and ${exampleRecipes.join(', ')} ${exampleRecipes.length === 1 ? 'is' : 'are'} Active` : ''}.`)
      return shutdown(0)
    }
    print(`Demo ended with the run ${result.run}${failedRecipes.map(([k, phase]) => `, recipe ${k} ${phase}`).join('')}.`)
    return shutdown(1)
  }

  void Promise.all([ended, recipesSettled]).then(() => print(`The examples finished. Still serving: apply your own manifests with kubectl --kubeconfig ${kubeconfig}; Ctrl-C stops everything.`))
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'))
    process.once('SIGTERM', () => resolve('SIGTERM'))
  })
  print(`${signal}: stopping...`)
  return shutdown(signal === 'SIGINT' ? 130 : 143)
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  },
)

/** Waits up to 30 s for agent-changed to report each Agent's ServiceAccount in its status. */
async function awaitIdentities(kube: LocalPlane['kube'], paths: readonly string[]): Promise<void> {
  const deadline = Date.now() + 30_000
  for (const path of paths) {
    while (Date.now() < deadline) {
      const agent = await kube.get(path) as { status?: { serviceAccountName?: string } } | null
      if (agent?.status?.serviceAccountName) break
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}
