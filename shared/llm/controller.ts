import type { V1Secret } from '@kubernetes/client-node'
import { ForbiddenError } from '../core/errors.js'
import { earliest } from '../ticks/alarm-plan.js'
import { ALARM_VERBS, armTickAlarmIfSooner, readAlarm, settleTickAlarm } from '../ticks/alarm.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import { checkCredentials, credentialsKeyOf, credentialsSecretName, type SecretLookup } from './plan/credentials.js'
import { planProvider, type ProviderFacts, type ProviderPlan } from './plan/plan.js'
import { probe, type ProbeResult } from './probe.js'
import { isProbeDue, probeTimeoutMsOf } from './plan/schedule.js'
import { isTargetProblem, probeKeyOf, probeTargetFor } from './plan/target.js'
import type { LLMProvider } from '../schemas/llmprovider.js'
import { announce, ENGINE_VERBS, reconcile, type Controller, type EngineDeps, type Reconciled } from '../engine/controller.js'
import { UNCHANGED, type ControllerPlan } from '../core/plan.js'
import { sweep } from '../engine/limited.js'
import { CREDENTIAL_COPY_VERBS, syncCredentialCopies } from './sync-credential-copies.js'

/** The port verbs of the provider checks and the credential copies. */
export const LLM_PROVIDER_VERBS = [
  ...ENGINE_VERBS, ...ALARM_VERBS, ...CREDENTIAL_COPY_VERBS, 'listAllLLMProviders', 'listLLMProviders', 'getLLMProvider', 'replaceLLMProviderStatus', 'getSecret',
] as const satisfies readonly (keyof Kube)[]
export type LLMProviderKube = KubeVerbs<typeof LLM_PROVIDER_VERBS>

/**
 * What one round shares between the providers it checks: one probe per endpoint+credential
 * (the dedupe key never holds the key itself, only a hash of it) and one read per Secret.
 * A single event's reconcile gets a round of its own, so a retry after a lost race re-uses
 * its probe instead of sending another.
 */
export interface ProbeRound {
  fetch?: typeof fetch
  readonly probes: Map<string, Promise<ProbeResult>>
  readonly secrets: Map<string, Promise<V1Secret | null>>
  /** Probes actually sent (distinct dedupe keys). */
  sent: number
}

/** A fresh round; `fetch` replaces the global one (benchmarks, tests). */
export function newProbeRound(fetchImpl?: typeof fetch): ProbeRound {
  return { ...(fetchImpl ? { fetch: fetchImpl } : {}), probes: new Map(), secrets: new Map(), sent: 0 }
}

/** Whole reconciles tried when another writer wins the status race. */
const TRIES = 3
/** Providers checked at once in a round; probes are I/O-bound, the API server is the limit. */
const CONCURRENCY = 8
/**
 * A round starts no probe after this long, so it ends well within the Service's 90 s timeout
 * (each probe is itself limited to 30 s); what is left is still due next minute.
 */
const ROUND_BUDGET_MS = 40_000

/** The LLMProvider planner's plan. */
export interface ProviderWork extends ControllerPlan {
  plan: ProviderPlan
}

/**
 * Checks one LLMProvider if it is due (new, spec changed, or its next probe time has come):
 * credentials (purko's check), then the cheap list-models probe, then its status, written last and
 * resourceVersion-guarded; nothing is written when it is not due.
 */
export async function reconcileLLMProvider(
  deps: EngineDeps<LLMProviderKube>, namespace: string, name: string, round: ProbeRound = newProbeRound(), listed?: LLMProvider,
): Promise<Reconciled<ProviderWork>> {
  // A round settles the probe alarm itself, after all its probes; an event's reconcile arms it.
  const arms = listed === undefined
  return reconcile(controllerFor(round, arms, listed), deps, namespace, name)
}

/** What one probe round did. */
export interface RoundOutcome {
  providers: number
  due: number
  probes: number
  applied: number
  failed: number
  /** Due providers left for the next round because this one ran out of time. */
  deferred: number
}

/**
 * The probe round (the hourly heartbeat llmproviders-probe, and its alarm at the earliest
 * probe due): one LIST, then only the due providers, at most CONCURRENCY at once, one probe per
 * endpoint+credential. The copies of platform keys in opted-in namespaces follow (sharing the
 * Secrets this round read), so a rotated key reaches them by the next round (a provider's probe
 * interval, 5 minutes by default); a provider event refreshes them at once.
 */
export async function probeRound(deps: EngineDeps<LLMProviderKube>, round: ProbeRound = newProbeRound(), budgetMs = ROUND_BUDGET_MS): Promise<RoundOutcome> {
  // Read before the list: an arm after it makes the settle below a lost race (alarm-plan.ts).
  const alarm = await readAlarm(deps, 'llmproviders-probe')
  const providers = await deps.kube.listAllLLMProviders()
  const started = deps.now()
  const now = started.toISOString()
  // Longest overdue first, so a round cut short by its budget serves those next time first.
  const due = providers.filter((p) => isProbeDue(p, now)).sort((a, b) => byText(a.status?.nextProbeAt ?? '', b.status?.nextProbeAt ?? ''))
  const { applied, failed, deferred } = await sweep(due, CONCURRENCY, deps.log, 'Could not probe LLMProvider', async (p) =>
    (await reconcileLLMProvider(deps, p.metadata.namespace ?? '', p.metadata.name ?? '', round, p)).result === 'applied',
  { now: deps.now, ms: budgetMs })
  await copyCredentials(deps, providers, round)
  // What this round probed is looked at again a minute later; else the earliest probe listed.
  await settleTickAlarm(deps, 'llmproviders-probe', alarm, due.length > 0 ? now : earliest(providers.map((p) => p.status?.nextProbeAt)))
  return { providers: providers.length, due: due.length, probes: round.sent, applied, failed, deferred }
}

/**
 * Keeps the copies of platform provider keys (shared/llm/sync-credential-copies.ts)
 * in step with `providers` (every provider, or the platform namespace's). Best effort: a failed
 * copy is logged and retried by the next round, never a reason to redeliver a provider event.
 */
export async function copyCredentials(deps: EngineDeps<LLMProviderKube>, providers?: readonly LLMProvider[], round?: ProbeRound): Promise<void> {
  try {
    const platform = providers ?? await deps.kube.listLLMProviders(deps.config.platformNamespace)
    const kube = round ? sharingPlatformSecrets(deps.kube, deps.config.platformNamespace, round) : deps.kube
    const outcome = await syncCredentialCopies(kube, deps.config.platformNamespace, platform)
    for (const f of outcome.failed) deps.log.warn({ namespace: f.namespace, err: f.message }, 'Could not copy platform LLMProvider keys')
    if (outcome.written.length === 0) return
    // Logged and published (dev.kinetic.llmprovider.credentials.copied), not a Kubernetes Event: routine.
    const missing = new Set(outcome.missing.map((m) => m.provider))
    const copied = platform.filter((p) => p.metadata.namespace === deps.config.platformNamespace && p.spec.credentials?.secretRef && !missing.has(p.metadata.name ?? ''))
    for (const provider of copied) {
      await announce(deps, 'LLMProvider', provider, `${provider.metadata.uid ?? ''}/copies/${outcome.written.join(',')}/${deps.now().toISOString()}`, [{
        kind: 'credentials.copied', type: 'Normal', reason: 'CredentialsCopied', record: false,
        message: `Key of LLMProvider ${provider.metadata.name} copied to Secret kinetic-llm-credentials in ${outcome.written.join(', ')}`,
        data: { namespaces: outcome.written },
      }])
    }
  } catch (err) {
    deps.log.warn({ err: (err as Error).message }, 'Could not copy platform LLMProvider keys')
  }
}

function controllerFor(round: ProbeRound, arms: boolean, listed?: LLMProvider): Controller<LLMProvider, ProviderFacts, ProviderWork, LLMProviderKube> {
  // A round's LIST is as fresh as a GET; only a retry after a lost race reads again.
  let first = listed
  return {
    kind: 'LLMProvider',
    conflictRetries: TRIES - 1,
    read(deps, namespace, name) {
      const known = first
      first = undefined
      return known ? Promise.resolve(known) : deps.kube.getLLMProvider(namespace, name)
    },
    async gather(deps, provider) {
      if (!isProbeDue(provider, deps.now().toISOString())) return UNCHANGED
      return gatherFacts(deps, provider, round)
    },
    plan(provider, facts, now) {
      const plan = planProvider(provider, facts, now)
      return { plan, transitions: plan.transitions }
    },
    writeChildren: async (_deps, _provider, _facts, work) => work,
    async writeParent(deps, provider, { plan }) {
      await deps.kube.replaceLLMProviderStatus(provider.metadata.namespace ?? '', provider.metadata.name ?? '', provider.metadata.resourceVersion ?? '', plan.status)
      // A probe sooner than the one before (or the first): the probe alarm fires by then.
      if (arms) await armTickAlarmIfSooner(deps, 'llmproviders-probe', provider.status?.nextProbeAt, plan.status.nextProbeAt)
    },
    eventSeed: (provider, work) => `${provider.metadata.uid ?? ''}/${work.plan.status.lastHealthCheck ?? ''}`,
  }
}

async function gatherFacts(deps: EngineDeps<LLMProviderKube>, provider: LLMProvider, round: ProbeRound): Promise<ProviderFacts> {
  const credentials = checkCredentials(provider, await lookupSecret(deps, provider, round))
  if (!credentials.valid) return { credentials, probe: 'skipped' }
  if (provider.spec.healthCheck?.enabled === false) return { credentials, probe: 'disabled' }
  const target = probeTargetFor(provider, credentials.secret)
  if (isTargetProblem(target)) return { credentials, probe: target }
  const key = probeKeyOf(target)
  let pending = round.probes.get(key)
  if (!pending) {
    round.sent++
    pending = probe(target, { timeoutMs: probeTimeoutMsOf(provider), now: deps.now, ...(round.fetch ? { fetch: round.fetch } : {}) })
    round.probes.set(key, pending)
  }
  return { credentials, probe: await pending }
}

/** A Secret read at most once per round; a failed read is forgotten, so it must not poison the round. */
function readSecret(kube: Pick<Kube, 'getSecret'>, round: ProbeRound, namespace: string, name: string): Promise<V1Secret | null> {
  const cacheKey = `${namespace}/${name}`
  let pending = round.secrets.get(cacheKey)
  if (!pending) {
    pending = kube.getSecret(namespace, name)
    round.secrets.set(cacheKey, pending)
    pending.catch(() => round.secrets.delete(cacheKey))
  }
  return pending
}

/** `kube`, but platform-namespace Secret reads come from the round (the copies need the same Secrets the checks read). */
function sharingPlatformSecrets<K extends Pick<Kube, 'getSecret'>>(kube: K, platformNamespace: string, round: ProbeRound): K {
  return new Proxy(kube, {
    get(target, prop, receiver) {
      if (prop === 'getSecret') {
        return (namespace: string, name: string) => (namespace === platformNamespace ? readSecret(target, round, namespace, name) : target.getSecret(namespace, name))
      }
      const value = Reflect.get(target, prop, receiver) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    },
  })
}

/** The provider's Secret as the credentials check needs it; a 403 (RBAC) is a finding, not a crash. */
async function lookupSecret(deps: EngineDeps<LLMProviderKube>, provider: LLMProvider, round: ProbeRound): Promise<SecretLookup> {
  const name = credentialsSecretName(provider)
  if (!name) return { state: 'none' }
  const namespace = provider.metadata.namespace ?? ''
  const key = credentialsKeyOf(provider)
  try {
    const secret = await readSecret(deps.kube, round, namespace, name)
    if (!secret) return { state: 'missing' }
    const raw = secret.data?.[key]
    return raw === undefined ? { state: 'found' } : { state: 'found', value: Buffer.from(raw, 'base64').toString('utf8') }
  } catch (err) {
    // Outside the platform namespace the read needs a grant of the namespace's own: a finding
    // that names the grant. Anything else (an outage, a bug) is not the provider's to report.
    if (!(err instanceof ForbiddenError)) throw err
    deps.log.warn({ namespace, name: provider.metadata.name, secret: name, err: err.message }, 'Reading the credentials Secret of LLMProvider is forbidden')
    return { state: 'forbidden' }
  }
}

// Locale-independent ordering.
function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
