import { PassThrough, Writable, type Readable } from 'node:stream'
import type { KubeConfig } from '@kubernetes/client-node'
// The handler is not exported from the package index; it is what the package's own Attach
// uses, and taking it directly lets the bridge handle every channel itself (the Attach class
// would end process.stdout on a v5 close frame and throw on channel 255).
import { WebSocketHandler } from '@kubernetes/client-node/dist/web-socket-handler.js'

/**
 * The bridge's stream source in the pod: `pods/attach` through the API server to the stdin
 * and stdout of the MCP server's container (stdin=true, stdout=true, stderr=false, tty=false),
 * over a WebSocket speaking the channel protocol: every binary frame starts with a channel
 * byte (0 stdin, 1 stdout, 2 stderr, 3 status, 255 close with v5.channel.k8s.io).
 * This module and the Kube adapter (shared/kube/client.ts and shared/kube/client/) are the
 * only code that talks to the API server; the bridge is a program of its own, not a function,
 * so it does not go through the function port.
 */

export interface AttachTarget {
  namespace: string
  pod: string
  container: string
}

export interface Attached {
  /** The container's stdin; ending it half-closes stdin (v5) or closes the connection (v4). */
  stdin: Writable
  /** The container's stdout; it ends when the attach ends. */
  stdout: Readable
  /** The negotiated subprotocol, e.g. `v5.channel.k8s.io`. */
  protocol: string
  /** Settles with a reason when the attach ended (container exited, connection closed). */
  closed: Promise<string>
  close(): void
}

const STDIN = 0
const STDOUT = 1
const STATUS = 3
const CLOSE = 255

/** The attach request path (query in the order the API server documents it). */
export function attachPath(target: AttachTarget): string {
  const query = new URLSearchParams({ container: target.container, stdin: 'true', stdout: 'true', stderr: 'false', tty: 'false' })
  return `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/pods/${encodeURIComponent(target.pod)}/attach?${query}`
}

interface Socket {
  protocol: string
  readyState: number
  send(data: Buffer, cb?: (err?: Error) => void): void
  close(code?: number): void
  on(event: 'close', cb: (code: number, reason: Buffer) => void): void
  on(event: 'error', cb: (err: Error) => void): void
}

/** Describes a status frame (a metav1.Status) in one line, e.g. why the container stopped. */
function statusText(payload: Buffer): string {
  try {
    const status = JSON.parse(payload.toString('utf8')) as { status?: string; message?: string; reason?: string }
    if (status.status === 'Success') return 'the container stream ended'
    return `the API server ended the attach: ${status.message ?? status.reason ?? status.status ?? 'unknown status'}`
  } catch {
    return 'the API server ended the attach with an unreadable status'
  }
}

/** Attaches to the container once; rejects when the API server refuses (RBAC, pod or container missing, not running). */
export async function attachToContainer(kc: KubeConfig, target: AttachTarget): Promise<Attached> {
  const stdout = new PassThrough()
  let reason: string | undefined
  let settle!: (reason: string) => void
  const closed = new Promise<string>((resolve) => { settle = resolve })
  const finish = (why: string) => {
    reason ??= why
    if (!stdout.writableEnded) stdout.end()
  }
  // The handler ends streams.stdout on a close frame for stdout; give it ours.
  const streams = { stdin: new PassThrough(), stdout, stderr: new PassThrough() }
  const handler = new WebSocketHandler(kc, undefined, streams)
  const ws = (await handler.connect(attachPath(target), null, (channel: number, data: Buffer) => {
    if (channel === STDOUT) {
      if (data.length > 0 && !stdout.writableEnded) stdout.write(data)
    } else if (channel === STATUS) {
      finish(statusText(data))
    } else if (channel === CLOSE && data[0] === STDOUT) {
      finish('the container closed its stdout')
    }
    // stderr was not asked for; anything else is ignored rather than thrown inside the socket.
    return true
  }).catch((err: unknown) => {
    // The socket rejects with an ErrorEvent (e.g. "Unexpected server response: 403"), not an Error.
    const message = err instanceof Error ? err.message : String((err as { message?: unknown })?.message ?? err)
    throw new Error(`attach to ${target.namespace}/${target.pod} container ${target.container} failed: ${message}`, { cause: err })
  })) as unknown as Socket

  ws.on('close', (code, why) => {
    finish(`the attach connection closed (${code}${why.length > 0 ? ` ${why.toString('utf8')}` : ''})`)
    settle(reason!)
  })
  ws.on('error', (err) => finish(`the attach connection failed: ${err.message}`))

  const v5 = ws.protocol === 'v5.channel.k8s.io'
  const frame = (channel: number, data: Buffer) => Buffer.concat([Buffer.of(channel), data])
  const stdin = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      if (ws.readyState !== 1) return callback(new Error('the attach connection is closed'))
      ws.send(frame(STDIN, typeof chunk === 'string' ? Buffer.from(chunk) : chunk), callback)
    },
    final(callback) {
      if (v5 && ws.readyState === 1) ws.send(Buffer.of(CLOSE, STDIN), () => callback())
      else {
        ws.close(1000)
        callback()
      }
    },
  })
  return { stdin, stdout, protocol: ws.protocol, closed, close: () => ws.close(1000) }
}

export interface RetryOptions {
  /** Give up after this long (default 120 s): the pod's containers start together. */
  timeoutMs?: number
  /** First pause between attempts (default 500 ms), doubled up to 5 s. */
  delayMs?: number
  onRetry?: (err: unknown, attempt: number) => void
  sleep?: (ms: number) => Promise<void>
  now?: () => number
}

/** Attaches, retrying while the container is not running yet; rejects with the last error after `timeoutMs`. */
export async function attachWithRetry(kc: KubeConfig, target: AttachTarget, opts: RetryOptions = {}): Promise<Attached> {
  const timeoutMs = opts.timeoutMs ?? 120_000
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const now = opts.now ?? Date.now
  const started = now()
  let delay = opts.delayMs ?? 500
  for (let attempt = 1; ; attempt++) {
    try {
      return await attachToContainer(kc, target)
    } catch (err) {
      if (now() - started + delay > timeoutMs) throw err
      opts.onRetry?.(err, attempt)
      await sleep(delay)
      delay = Math.min(delay * 2, 5000)
    }
  }
}
