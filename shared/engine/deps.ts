import { readRuntimeConfig } from '../config.js'
import { lazyKube } from '../kube/lazy.js'
import { createLogger } from '../log.js'
import type { EngineDeps } from './controller.js'
import { httpKineticEvents } from './kinetic-events.js'
import { createEngineMemo } from './memo.js'

/** Real dependencies of a Workflow function: the API from $KUBECONFIG or in-cluster, env config, a JSON logger. */
export function realEngineDeps(functionName: string): EngineDeps {
  const log = createLogger(functionName)
  const config = readRuntimeConfig()
  const kube = lazyKube(async () => {
    const { KubeClient, loadKubeConfig } = await import('../kube/client.js')
    return new KubeClient(loadKubeConfig())
  })
  return {
    kube,
    log,
    now: () => new Date(),
    config,
    events: httpKineticEvents(config.eventSink, `/kinetic/${functionName}`, log),
    memo: createEngineMemo(),
  }
}
