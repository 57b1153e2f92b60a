// kubectl itself against a server, as a person types it: the cluster tier runs the same
// command line against the real kube-apiserver and the embedded one and compares what the
// person reads. Found as KINETIC_KUBECTL, else `kubectl` on PATH, else beside the
// control-plane binaries.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Where kubectl is, or why it is not there. */
export type KubectlLookup = { available: true; path: string; version: string } | { available: false; reason: string }

/** Finds kubectl (see the file comment). */
export function findKubectl(binDir: string | undefined, env: NodeJS.ProcessEnv = process.env): KubectlLookup {
  const candidates = [
    ...(env.KINETIC_KUBECTL ? [env.KINETIC_KUBECTL] : []),
    spawnSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).stdout.trim(),
    ...(binDir ? [join(binDir, 'kubectl')] : []),
  ].filter((p) => p && existsSync(p))
  const path = candidates[0]
  if (!path) return { available: false, reason: 'no kubectl: set KINETIC_KUBECTL, put kubectl on PATH, or place it beside the control-plane binaries' }
  const version = spawnSync(path, ['version', '--client', '-o', 'json'], { encoding: 'utf8' })
  const parsed = JSON.parse(version.stdout || '{}') as { clientVersion?: { gitVersion?: string } }
  return { available: true, path, version: parsed.clientVersion?.gitVersion ?? 'unknown' }
}

/** What one kubectl run printed, and how it exited. */
export interface KubectlResult {
  code: number
  stdout: string
  stderr: string
}

/** kubectl bound to one kubeconfig, with a discovery and OpenAPI cache of its own. */
export class Kubectl {
  private readonly cacheDir = mkdtempSync(join(tmpdir(), 'kinetic-kubectl-cache-'))

  constructor(readonly name: string, private readonly path: string, private readonly kubeconfig: string) {}

  /** Runs `kubectl <args>` (stdin from `input`), killed after `timeoutMs`. */
  run(args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<KubectlResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.path, [`--kubeconfig=${this.kubeconfig}`, `--cache-dir=${this.cacheDir}`, ...args], {
        env: { PATH: process.env.PATH ?? '', HOME: this.cacheDir, KUBECTL_EXTERNAL_DIFF: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
      child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000)
      child.on('error', reject)
      child.on('close', (code, signal) => {
        clearTimeout(timer)
        resolve({ code: code ?? (signal ? -1 : 0), stdout, stderr })
      })
      child.stdin.end(opts.input ?? '')
    })
  }

  /** Starts `kubectl <args>` and returns the running process (for `-f` and `-w`): its output so far, its end, and a way to end it. */
  start(args: string[]): { output: () => string; exited: Promise<KubectlResult>; stop: () => Promise<KubectlResult> } {
    const child = spawn(this.path, [`--kubeconfig=${this.kubeconfig}`, `--cache-dir=${this.cacheDir}`, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: this.cacheDir }, stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
    const closed = new Promise<KubectlResult>((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr })))
    return {
      output: () => stdout,
      exited: closed,
      stop: async () => {
        if (child.exitCode === null) child.kill('SIGTERM')
        return closed
      },
    }
  }
}

/**
 * What a person reads, with only what two servers can never share replaced: ages, times,
 * uids, resourceVersions, the server's address, kubectl diff's temporary folders.
 */
export function readable(text: string): string {
  return text
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)/g, '<time>')
    .replace(/\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d [+-]\d{4}/g, '<time>')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<uid>')
    .replace(/(resourceVersion: |Resource Version:\s+|"resourceVersion": )"?\d+"?/g, '$1<rv>')
    .replace(/(?<=\s)(\d+(\.\d+)?(s|m|h|d)|\d+m\d+s|\d+h\d+m|<invalid>|<unknown>)(?=\s|$)/gm, '<age>')
    .replace(/https?:\/\/127\.0\.0\.1:\d+/g, '<server>')
    .replace(/\/tmp\/(LIVE|MERGED)-\d+/g, '/tmp/$1-<n>')
    .replace(/\t\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ [+-]\d{4}/g, '\t<time>')
    // Columns are as wide as their widest cell, and an age can be one character longer on one side.
    .replace(/(?<=\S) {2,}(?=\S)/g, '  ')
}
