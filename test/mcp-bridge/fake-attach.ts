// A small stand-in for the API server's `pods/attach` endpoint on 127.0.0.1: a hand-written
// WebSocket server (RFC 6455 handshake and framing, no library) that speaks the channel
// protocol, so the test checks the bytes the bridge's attach client really sends.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface AttachRequest {
  path: string
  query: URLSearchParams
  authorization: string | undefined
  protocols: string[]
}

export interface Conn {
  request: AttachRequest
  protocol: string
  /** Sends a binary frame: channel byte + payload. */
  send(channel: number, payload: Buffer | string): void
  /** Closes the WebSocket with a close frame. */
  close(code?: number): void
  /** Each binary message from the client, channel byte included. */
  onMessage(cb: (data: Buffer) => void): void
  onClose(cb: () => void): void
}

export interface FakeAttach {
  url: string
  port: number
  connections: Conn[]
  close(): Promise<void>
}

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

function encodeFrame(opcode: number, payload: Buffer): Buffer {
  const length = payload.length
  const header = length < 126 ? Buffer.of(0x80 | opcode, length)
    : length < 65536 ? Buffer.of(0x80 | opcode, 126, length >> 8, length & 0xff)
      : Buffer.concat([Buffer.of(0x80 | opcode, 127), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(length)); return b })()])
  return Buffer.concat([header, payload])
}

/** Decodes complete client frames from `buffer`; returns them and the bytes left over. */
function decodeFrames(buffer: Buffer): { frames: { opcode: number; fin: boolean; payload: Buffer }[]; rest: Buffer } {
  const frames: { opcode: number; fin: boolean; payload: Buffer }[] = []
  let offset = 0
  for (;;) {
    if (buffer.length - offset < 2) break
    const b0 = buffer[offset]!
    const b1 = buffer[offset + 1]!
    let length = b1 & 0x7f
    let at = offset + 2
    if (length === 126) {
      if (buffer.length < at + 2) break
      length = buffer.readUInt16BE(at)
      at += 2
    } else if (length === 127) {
      if (buffer.length < at + 8) break
      length = Number(buffer.readBigUInt64BE(at))
      at += 8
    }
    const masked = (b1 & 0x80) !== 0
    if (!masked) throw new Error('a client frame must be masked')
    if (buffer.length < at + 4 + length) break
    const mask = buffer.subarray(at, at + 4)
    const payload = Buffer.from(buffer.subarray(at + 4, at + 4 + length))
    for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!
    frames.push({ opcode: b0 & 0x0f, fin: (b0 & 0x80) !== 0, payload })
    offset = at + 4 + length
  }
  return { frames, rest: buffer.subarray(offset) }
}

/**
 * Starts the endpoint. `accept` decides per request: a number refuses the upgrade with that
 * HTTP status; otherwise the chosen subprotocol (default: the first the client offers).
 */
export async function startFakeAttach(
  onConnect: (conn: Conn) => void,
  accept: (request: AttachRequest) => number | { protocol?: string } = () => ({}),
): Promise<FakeAttach> {
  const connections: Conn[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((_req, res) => void res.writeHead(400).end('upgrade required'))
  server.on('connection', (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const request: AttachRequest = {
      path: url.pathname,
      query: url.searchParams,
      authorization: req.headers.authorization,
      protocols: String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean),
    }
    const decision = accept(request)
    if (typeof decision === 'number') {
      const body = JSON.stringify({ kind: 'Status', status: 'Failure', code: decision, message: 'refused by the fake' })
      socket.end(`HTTP/1.1 ${decision} Refused\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
      return
    }
    const protocol = decision.protocol ?? request.protocols[0]!
    const key = String(req.headers['sec-websocket-key'])
    const acceptKey = createHash('sha1').update(key + GUID).digest('base64')
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptKey}\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`)
    const messageListeners: ((data: Buffer) => void)[] = []
    const closeListeners: (() => void)[] = []
    let pending = Buffer.alloc(0)
    let fragments: Buffer[] = []
    let closed = false
    const conn: Conn = {
      request,
      protocol,
      send: (channel, payload) => {
        if (!closed) socket.write(encodeFrame(0x2, Buffer.concat([Buffer.of(channel), Buffer.from(payload)])))
      },
      close: (code = 1000) => {
        if (closed) return
        closed = true
        socket.end(encodeFrame(0x8, Buffer.of(code >> 8, code & 0xff)))
      },
      onMessage: (cb) => void messageListeners.push(cb),
      onClose: (cb) => void closeListeners.push(cb),
    }
    socket.on('data', (chunk: Buffer) => {
      const { frames, rest } = decodeFrames(Buffer.concat([pending, chunk]))
      pending = Buffer.from(rest)
      for (const f of frames) {
        if (f.opcode === 0x8) {
          conn.close()
          continue
        }
        if (f.opcode === 0x9) {
          socket.write(encodeFrame(0xa, f.payload))
          continue
        }
        if (f.opcode === 0x2 || f.opcode === 0x0) {
          fragments.push(f.payload)
          if (f.fin) {
            const data = Buffer.concat(fragments)
            fragments = []
            for (const cb of messageListeners) cb(data)
          }
        }
      }
    })
    socket.on('close', () => {
      closed = true
      for (const cb of closeListeners) cb()
    })
    connections.push(conn)
    onConnect(conn)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    connections,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    }),
  }
}

/**
 * Plays the container runtime for one attach: spawns the program, sends channel 0 to its
 * stdin, its stdout back on channel 1, and its exit as a status frame and a close.
 */
export function runAsContainer(conn: Conn, command: string, args: string[], cwd: string): ChildProcessWithoutNullStreams {
  const child = spawn(command, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] })
  conn.onMessage((data) => {
    if (data[0] === 0 && !child.stdin.destroyed) child.stdin.write(data.subarray(1))
  })
  conn.onClose(() => child.kill())
  child.stdout.on('data', (chunk: Buffer) => conn.send(1, chunk))
  child.on('exit', (code) => {
    conn.send(3, JSON.stringify({ kind: 'Status', status: 'Failure', message: `container exited with ${code}` }))
    conn.close()
  })
  return child
}
