import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request a test subscriber received. */
export interface Received {
  path: string
  headers: Record<string, string>
  body: string
}

/** What the subscriber answers to the n-th request (0-based). */
export type Responder = (n: number, req: Received) => { status: number; headers?: Record<string, string>; body?: string }

/** A real HTTP subscriber on 127.0.0.1 that records requests and answers as told. */
export async function startSubscriber(respond: Responder): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v
      const r: Received = { path: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8') }
      const answer = respond(received.length, r)
      received.push(r)
      res.writeHead(answer.status, answer.headers ?? {})
      res.end(answer.body ?? '')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/`,
    received,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }),
  }
}

/** A pino destination that keeps the parsed JSON lines, to assert on log output. */
export function captureLog(): { lines: Array<Record<string, unknown>>; write(line: string): void } {
  const lines: Array<Record<string, unknown>> = []
  return { lines, write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>) } }
}
