// `npm start`: the embedded local plane plus the bundled example, serving until Ctrl-C.
// `npm run demo` (`--demo`): the same, but exits once the example Workflow run has ended and the
// example WorkflowRecipe has settled: 0 when the run Succeeded and the recipe is Active, 1 on a
// run Failed/Cancelled/CompletedWithErrors or a recipe Failed/Rejected/RollbackFailed, 2 on
// timeout (`--timeout <seconds>`, default 120).
// `--kubeconfig <file>` (or KINETIC_KUBECONFIG): the functions and the Knative emulation run
// locally against that cluster instead (crds/ and knative/'s RBAC installed there, each function
// as its own ServiceAccount, step Jobs on the cluster's nodes); `npm start` then applies no
// example, `npm run demo` applies it afresh. `--executor-image <ref>` sets the step Jobs' image.
// The command line is start-args.ts, what it prints as the example runs start-progress.ts, and
// the bundled example start-examples.ts.
import { mkdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { pino } from 'pino'
import { REPO_ROOT } from '../local/jobs/step-process.js'
import { startLocalPlane, type LocalPlane } from '../local/plane.js'
import { parseArgs, readClusterTarget } from './start-args.js'
import { awaitIdentities, readExamples, removeLeftoverExamples } from './start-examples.js'
import { followExamples, print, printEvents, since, watchProgress } from './start-progress.js'

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2), process.env)
  const t0 = Date.now()
  const root = REPO_ROOT
  const logFile = join(root, '.kinetic', 'logs', 'plane.log')
  mkdirSync(join(root, '.kinetic', 'logs'), { recursive: true })
  const log = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { function: 'local-plane' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: logFile, sync: true }))

  let cluster: { kubeConfig: KubeConfig; kubeconfigPath: string } | undefined
  if (args.kubeconfig) {
    const target = readClusterTarget(args.kubeconfig)
    if ('error' in target) {
      print(target.error)
      return 1
    }
    cluster = target
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

  printEvents(plane.knative, t0)

  const examplesDir = join(root, 'examples', 'local')
  const examples = readExamples(examplesDir)
  const exampleWorkflows = examples.filter((o) => o.kind === 'Workflow').map((o) => `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name}`)
  const exampleRecipes = examples.filter((o) => o.kind === 'WorkflowRecipe').map((o) => `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name}`)
  const progress = followExamples(plane.kube, t0, exampleWorkflows, exampleRecipes)
  const { ended, recipesSettled, recipePhases, settledRecipes } = progress

  // On a cluster only the demo applies the example, and afresh: a run left by an earlier demo
  // would otherwise be Succeeded already and never change.
  const applyExamples = !cluster || args.demo
  if (cluster && args.demo) {
    try {
      await removeLeftoverExamples(plane.kube, t0, exampleWorkflows, exampleRecipes)
    } catch (err) {
      print(`Could not remove the example run left by an earlier demo: ${err instanceof Error ? err.message : String(err)}`)
      await stop()
      return 1
    }
  }
  const watchStop = new AbortController()
  const watch = watchProgress(plane.kube, progress, log, watchStop.signal)
  // Nothing is applied before the watches have their starting point, so no change of this run is missed.
  await watch.started

  const shutdown = async (code: number) => {
    watchStop.abort()
    await stop()
    await Promise.all(watch.watches)
    const stats = plane.knative.stats()
    print(`Events: ${stats.delivered} delivered, ${stats.retried} retried, ${stats.deadLettered} dead-lettered, ${stats.dropped} dropped. Stopped everything.`)
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
