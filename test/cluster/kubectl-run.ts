import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { kubeBinDir } from './tier.js'

/**
 * The kubectl the cluster tier runs for what users type: `KINETIC_KUBECTL`, else the one beside
 * the control-plane binaries, else the first on PATH. Throws, naming the three, when there is none.
 */
export function kubectlPath(): string {
  const configured = process.env.KINETIC_KUBECTL
  if (configured) {
    if (!existsSync(configured)) throw new Error(`KINETIC_KUBECTL=${configured} does not exist`)
    return configured
  }
  const candidates = [join(kubeBinDir(), 'kubectl'), ...(process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, 'kubectl'))]
  const found = candidates.find((p) => existsSync(p))
  if (!found) throw new Error('no kubectl: set KINETIC_KUBECTL, put kubectl beside the control-plane binaries, or on PATH')
  return found
}

/** What one kubectl run printed and how it ended (never throws on a non-zero exit). */
export interface KubectlRun {
  status: number
  stdout: string
  stderr: string
}

/** Runs kubectl with `args` against the cluster of `kubeconfig`, from `cwd`. */
export function kubectl(kubeconfig: string, args: readonly string[], cwd?: string): KubectlRun {
  try {
    const stdout = execFileSync(kubectlPath(), [...args, `--kubeconfig=${kubeconfig}`], { encoding: 'utf8', stdio: 'pipe', ...(cwd ? { cwd } : {}) })
    return { status: 0, stdout, stderr: '' }
  } catch (err) {
    const e = err as { status?: number; stdout?: string; stderr?: string }
    return { status: e.status ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}
