/**
 * Everything the CLI touches outside itself, so tests run it in-process: output streams, the
 * environment, the clock, waiting, the HTTP client and Ctrl-C.
 */
export interface CliIo {
  stdout(text: string): void
  stderr(text: string): void
  env: Record<string, string | undefined>
  /** Home directory for `~/.kube/config`; default from the environment. */
  home?: string
  /** `kinetic`, or `kn kinetic` when started as the kn plugin; names the program in help. */
  programName?: string
  /** True when stdout is a terminal: `status --watch` redraws in place instead of appending. */
  isTTY?: boolean
  now?: () => Date
  /** Poll interval of --watch, -f and --wait (default 1000 ms). */
  pollMs?: number
  /** Ends --watch, -f and --wait loops (Ctrl-C). */
  signal?: AbortSignal
  fetch?: typeof fetch
}

/** The io with every default filled in. */
export interface ResolvedIo extends Required<Omit<CliIo, 'signal' | 'home'>> {
  signal: AbortSignal | undefined
  home: string | undefined
}

/** Fills in the defaults of an io. */
export function resolveIo(io: CliIo): ResolvedIo {
  return {
    stdout: io.stdout,
    stderr: io.stderr,
    env: io.env,
    home: io.home ?? io.env.HOME ?? io.env.USERPROFILE,
    programName: io.programName ?? 'kinetic',
    isTTY: io.isTTY ?? false,
    now: io.now ?? (() => new Date()),
    pollMs: io.pollMs ?? 1000,
    signal: io.signal,
    fetch: io.fetch ?? globalThis.fetch,
  }
}

/** Waits `ms`, or less when the signal fires; true when it fired (stop the loop). */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve(false)
    }, ms)
    const onAbort = (): void => {
      clearTimeout(timer)
      resolve(true)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
