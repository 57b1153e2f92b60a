import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { KubeConfig, type Cluster, type Context, type User } from '@kubernetes/client-node'
import { CliError } from './errors.js'

/** Where the CLI talks to, resolved from the kubeconfig and flags as kubectl does. */
export interface ResolvedConfig {
  kc: KubeConfig
  context: string
  /** `-n`, else the context's namespace, else `default`. */
  namespace: string
  /** The kubeconfig user name (recorded as the source of manual runs). */
  user: string
  server: string
}

/** What resolution reads: flags, environment and the home directory. */
export interface ConfigInputs {
  kubeconfig?: string
  context?: string
  namespace?: string
  env: Record<string, string | undefined>
  home?: string
}

/** The kubeconfig files in effect: `--kubeconfig`, else each existing `$KUBECONFIG` entry, else `~/.kube/config`. */
export function kubeconfigFiles(inputs: ConfigInputs): string[] {
  if (inputs.kubeconfig) {
    if (!existsSync(inputs.kubeconfig)) throw new CliError(`kubeconfig ${inputs.kubeconfig} does not exist`)
    return [inputs.kubeconfig]
  }
  const fromEnv = inputs.env.KUBECONFIG
  if (fromEnv) return fromEnv.split(delimiter).filter((f) => f !== '' && existsSync(f))
  const home = inputs.home ? join(inputs.home, '.kube', 'config') : undefined
  return home && existsSync(home) ? [home] : []
}

/**
 * Loads the kubeconfig like kubectl: files merged with the first definition of each name
 * winning and the first current-context set; `--context` replaces the current context.
 */
export function resolveConfig(inputs: ConfigInputs): ResolvedConfig {
  const files = kubeconfigFiles(inputs)
  if (files.length === 0) throw new CliError('no kubeconfig found; set KUBECONFIG or run `npm start`')
  const clusters: Cluster[] = []
  const users: User[] = []
  const contexts: Context[] = []
  let current = ''
  for (const file of files) {
    const part = new KubeConfig()
    try {
      part.loadFromFile(file)
    } catch (err) {
      throw new CliError(`cannot read kubeconfig ${file}: ${(err as Error).message}`)
    }
    for (const c of part.clusters) if (!clusters.some((x) => x.name === c.name)) clusters.push(c)
    for (const u of part.users) if (!users.some((x) => x.name === u.name)) users.push(u)
    for (const c of part.contexts) if (!contexts.some((x) => x.name === c.name)) contexts.push(c)
    if (!current && part.currentContext) current = part.currentContext
  }
  const contextName = inputs.context ?? current
  if (!contextName) throw new CliError(`the kubeconfig (${files.join(', ')}) has no current context; pass --context <name>`)
  const context = contexts.find((c) => c.name === contextName)
  if (!context) {
    throw new CliError(`context "${contextName}" not found in the kubeconfig (${files.join(', ')}); contexts: ${contexts.map((c) => c.name).join(', ') || 'none'}`)
  }
  const cluster = clusters.find((c) => c.name === context.cluster)
  if (!cluster) throw new CliError(`context "${contextName}" names cluster "${context.cluster}", which the kubeconfig does not define`)
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters, users, contexts, currentContext: contextName })
  return {
    kc,
    context: contextName,
    namespace: inputs.namespace || context.namespace || 'default',
    user: context.user,
    server: cluster.server,
  }
}
