import type { MemoryProvider, MemoryProviderStatus } from '../schemas/memoryprovider.js'
import { MEMORY_CONFIGMAP_LABELS, planMemoryProvider, type MemoryStoreFacts } from './plan/memory-provider.js'
import { ENGINE_VERBS, reconcile, type Controller, type EngineDeps, type Reconciled } from '../engine/controller.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import { UNCHANGED, type ControllerPlan } from '../core/plan.js'
import { sweep } from '../engine/limited.js'

/** The port verbs of the MemoryProvider checks. */
export const MEMORY_PROVIDER_VERBS = [
  ...ENGINE_VERBS, 'listAllMemoryProviders', 'getMemoryProvider', 'replaceMemoryProviderStatus', 'listAllConfigMaps',
] as const satisfies readonly (keyof Kube)[]
export type MemoryProviderKube = KubeVerbs<typeof MEMORY_PROVIDER_VERBS>

/** One count of the builtin store shared by every provider a call checks. */
export interface MemoryCheck {
  count?: Promise<MemoryStoreFacts>
}

/** The MemoryProvider planner's plan: the status to write. */
export interface MemoryWork extends ControllerPlan {
  status: MemoryProviderStatus
}

/**
 * Checks one MemoryProvider (as purko does) and writes its status last, resourceVersion-guarded;
 * nothing when only lastChecked would move within a minute.
 */
export async function reconcileMemoryProvider(
  deps: EngineDeps<MemoryProviderKube>, namespace: string, name: string, check: MemoryCheck = {}, listed?: MemoryProvider,
): Promise<Reconciled<MemoryWork>> {
  return reconcile(controllerFor(check, listed), deps, namespace, name)
}

/** The recheck tick (PingSource memoryproviders-recheck, every 5 minutes): every provider, one count. */
export async function recheckMemoryProviders(deps: EngineDeps<MemoryProviderKube>): Promise<{ providers: number; applied: number; failed: number }> {
  const providers = await deps.kube.listAllMemoryProviders()
  const check: MemoryCheck = {}
  const { applied, failed } = await sweep(providers, 4, deps.log, 'Could not check MemoryProvider', async (p) =>
    (await reconcileMemoryProvider(deps, p.metadata.namespace ?? '', p.metadata.name ?? '', check, p)).result === 'applied')
  return { providers: providers.length, applied, failed }
}

function controllerFor(check: MemoryCheck, listed?: MemoryProvider): Controller<MemoryProvider, MemoryStoreFacts | null, MemoryWork, MemoryProviderKube> {
  // A listed provider is as fresh as a GET; only a retry after a lost race reads again.
  let first = listed
  return {
    kind: 'MemoryProvider',
    conflictRetries: 2,
    read(deps, namespace, name) {
      const known = first
      first = undefined
      return known ? Promise.resolve(known) : deps.kube.getMemoryProvider(namespace, name)
    },
    async gather(deps, provider) {
      if (provider.metadata.deletionTimestamp) return UNCHANGED
      if (provider.spec.type !== 'builtin') return null
      check.count ??= countEntries(deps)
      return check.count
    },
    plan(provider, facts, now) {
      return planMemoryProvider(provider, facts, now)
    },
    writeChildren: async (_deps, _p, _f, work) => work,
    async writeParent({ kube }, provider, work) {
      await kube.replaceMemoryProviderStatus(provider.metadata.namespace ?? '', provider.metadata.name ?? '', provider.metadata.resourceVersion ?? '', work.status)
    },
    eventSeed: (provider, work) => `${provider.metadata.uid ?? ''}/${work.status.lastChecked ?? ''}`,
  }
}

/** The builtin store's "ping": counting Kinetic's memory ConfigMaps in every namespace; a failure is its error. */
async function countEntries(deps: EngineDeps<MemoryProviderKube>): Promise<MemoryStoreFacts> {
  try {
    return { entryCount: (await deps.kube.listAllConfigMaps({ ...MEMORY_CONFIGMAP_LABELS })).length }
  } catch (err) {
    return { error: (err as Error).message }
  }
}
