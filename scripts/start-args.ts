import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'

/** The options of `npm start` and `npm run demo` (scripts/start.ts), and the cluster a kubeconfig names. */

/** The parsed command line. */
export interface Args {
  demo: boolean; timeoutSeconds: number; port: number; pingSeconds: number | undefined
  kubeconfig: string | undefined; executorImage: string | undefined
}

/** Parses the command line; throws on an unknown option or a missing value. */
export function parseArgs(argv: string[], env: NodeJS.ProcessEnv): Args {
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

/** The cluster target a kubeconfig file names, or why it cannot be used. */
export function readClusterTarget(file: string): { kubeConfig: KubeConfig; kubeconfigPath: string } | { error: string } {
  const path = resolve(file)
  if (!existsSync(path)) return { error: `No kubeconfig at ${path}` }
  const kubeConfig = new KubeConfig()
  try {
    kubeConfig.loadFromFile(path)
  } catch (err) {
    return { error: `Could not read the kubeconfig ${path}: ${err instanceof Error ? err.message : String(err)}` }
  }
  if (!kubeConfig.getCurrentCluster()) return { error: `The kubeconfig ${path} has no current context with a cluster` }
  return { kubeConfig, kubeconfigPath: path }
}
