import { ConflictError } from '../shared/core/errors.js'
import type { Kube } from '../shared/kube/port.js'
import type { FlagSpec, ParsedArgs } from './args.js'
import { CliError, explainKubeError, type KubeAction } from './errors.js'
import type { ResolvedIo } from './io.js'
import type { ResolvedConfig } from './kubeconfig.js'
import type { OutputFormat } from './output.js'

/** One `kinetic <command>`. */
export interface Command {
  name: string
  /** Positional arguments as help shows them, e.g. `<workflow> [step]`. */
  args: string
  /** Least and most positionals. */
  arity: [number, number]
  summary: string
  /** Longer help text (paragraphs). */
  description: string
  flags: FlagSpec[]
  examples: string[]
  run(session: Session, args: ParsedArgs): Promise<number>
}

/** What a command runs with: io, output format, and the cluster (resolved on first use). */
export class Session {
  private resolved: ResolvedConfig | undefined
  /** The API adapter; made on first call (client-node loads only when a command needs the cluster). */
  kube: Kube | undefined

  constructor(
    readonly io: ResolvedIo,
    readonly format: OutputFormat,
    private readonly flags: { kubeconfig?: string; context?: string; namespace?: string },
  ) {}

  /**
   * Resolves the kubeconfig (what fails without one). Loaded on demand, with client-node, so
   * help and usage errors answer without loading it.
   */
  async init(): Promise<this> {
    if (!this.resolved) {
      const { resolveConfig } = await import('./kubeconfig.js')
      this.resolved = resolveConfig({ ...this.flags, env: this.io.env, ...(this.io.home ? { home: this.io.home } : {}) })
    }
    return this
  }

  /** The kubeconfig in effect (after `init`). */
  get config(): ResolvedConfig {
    if (!this.resolved) throw new Error('Session.init() was not called')
    return this.resolved
  }

  get namespace(): string {
    return this.config.namespace
  }

  /**
   * Runs one Kubernetes call; a failure becomes a message naming the verb, resource and server.
   * With `conflicts`, a lost race (ConflictError) is rethrown as it is, for the caller to retry.
   */
  async call<T>(action: KubeAction, fn: (kube: Kube) => Promise<T>, opts: { conflicts?: boolean } = {}): Promise<T> {
    const config = this.config
    if (!this.kube) {
      const { KubeClient } = await import('../shared/kube/client.js')
      this.kube = new KubeClient(config.kc)
    }
    const kube = this.kube
    try {
      return await fn(kube)
    } catch (err) {
      if (err instanceof CliError) throw err
      if (opts.conflicts && err instanceof ConflictError) throw err
      const { context, user, server } = config
      throw explainKubeError(err, action, { context, user, server })
    }
  }

  out(text: string): void {
    this.io.stdout(text)
  }

  warn(text: string): void {
    this.io.stderr(text.endsWith('\n') ? text : `${text}\n`)
  }
}
