/**
 * What every console page and endpoint is handed: who is asking, a Kube adapter acting with
 * that person's rights, the time, the configuration. Built once per request by the function.
 */
import type { Credential, Kube, KubeVerbs } from '../kube/port.js'
import { STEP_POD_VERBS } from '../run-control/step-pod.js'
import type { Logger } from '../log.js'
import type { Html } from './html.js'

/**
 * The port verbs the console's pages and endpoints call, all with the person's rights: reads,
 * the run page's watch and log stream (the step's pod found as run-control finds it), who the
 * credential is, and the access reviews that decide which actions show.
 */
export const CONSOLE_VERBS = [
  'getWorkflow', 'listWorkflows', 'listWorkflowsIn', 'watchWorkflow', 'getAgent', 'listAgents', 'listAllAgents',
  'listLLMProviders', 'listAllLLMProviders', 'listMCPServers', 'listAllMCPServers', 'getRecipe', 'listRecipes', 'listAllRecipes',
  'listEvents', 'getConfigMap', 'readJobLog', 'followPodLog', ...STEP_POD_VERBS, 'reviewSelfAccess', 'whoAmI',
] as const satisfies readonly (keyof Kube)[]
export type ConsoleKube = KubeVerbs<typeof CONSOLE_VERBS>

/** How the console learns who is using it. */
export type ConsoleAuth = 'proxy' | 'token' | 'local'

export interface ConsoleConfig {
  /** `proxy`: trusted X-Forwarded-User/Groups; `token`: a bearer token pasted once; `local`: the embedded plane's admin. */
  auth: ConsoleAuth
  /** CIDRs whose X-Forwarded-User / X-Forwarded-Groups are believed (proxy mode). */
  trustedProxies: string[]
  /**
   * When set, a proxy's headers are believed only with `X-Kinetic-Proxy-Secret: <this>` too.
   * Under Knative every peer is the pod's own queue-proxy, so the address alone proves nothing.
   */
  proxySecret?: string
  /** When false (the default) nobody gets action buttons or the action endpoints: read only. */
  actions: boolean
  /** When true, someone not signed in sees what the console's own ServiceAccount can read, and is told so. */
  anonymousRead: boolean
  /** run-control's base URL, e.g. http://run-control.kinetic-system.svc.cluster.local. */
  runControlUrl?: string
  /** Namespaces listed when the person may not list a kind across all namespaces. */
  namespaces: string[]
  /** purko's agent namespace (name-only paths). */
  agentNamespace: string
  /** AES-256-GCM key for the session cookie of token sign-in (32 bytes), from a Secret; token mode needs it. */
  sessionKey?: Buffer
  /** Mark cookies Secure (default true; the embedded plane serves plain HTTP on 127.0.0.1). */
  secureCookies: boolean
  /** KINETIC_TRACE_URL_TEMPLATE: runs and steps link to their trace in this UI (shared/telemetry/trace-url.ts). */
  traceUrlTemplate?: string
}

/** The person using the console, as established for this request. */
export interface Person {
  /** How they were identified; `anonymous` reads with the console's own ServiceAccount. */
  mode: ConsoleAuth | 'anonymous'
  /** The name shown and written into requested-by (the Kubernetes username). */
  name: string
  groups: string[]
  /** The rights reads and access reviews use. */
  credential: Credential
}

/** One request being served. */
export interface ConsoleRequest {
  person: Person
  /** Acting with `person.credential`: everything shown is what this person may read. */
  kube: ConsoleKube
  now: Date
  config: ConsoleConfig
  /** The request URL (query parameters for filters and paging). */
  url: URL
  /** URLs of the bundled assets, by logical name (`console.css`, `run.js`, ...), content-hashed. */
  assetUrl: (name: string) => string
}

/** The section a page belongs to (the navigation highlights it). */
export type NavKey = 'workflows' | 'agents' | 'mcpservers' | 'providers' | 'recipes' | 'signin' | 'error'

/** What a page handler returns; the shell wraps it into the document. */
export interface PageResult {
  status: number
  title: string
  nav: NavKey
  body: Html
  /** Logical asset names of scripts the page needs beyond the common one. */
  scripts?: string[]
}

/** What the console function is built from; tests pass fakes or the embedded API server. */
export interface ConsoleDeps {
  config: ConsoleConfig
  log: Logger
  now: () => Date
  /** A Kube adapter using these rights (kubeAs over the process's kubeconfig). */
  kubeFor: (credential: Credential) => ConsoleKube
  /** The console ServiceAccount's own bearer token, read on each use (it rotates); proxy-mode actions send it to run-control. */
  ownToken?: () => Promise<string | undefined>
  /** How run-control is reached (tests pass their own). Default: global fetch. */
  fetch?: typeof fetch
}
