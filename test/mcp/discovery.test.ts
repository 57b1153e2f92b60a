import { afterEach, describe, expect, it } from 'vitest'
import { discoverTools, discoveryEndpoints, MAX_DESCRIPTION } from '../../shared/mcp/discovery.js'
import { bearer, closedPort, LONG_DESCRIPTION, legacySseHandler, pagedServer, serve, streamableHandler, type Running } from './discovery-servers.js'

const TOKEN = 'tok-s3cr3t-value-0123456789abcdef'
const running: Running[] = []
async function start(handler: Parameters<typeof serve>[0]): Promise<Running> {
  const s = await serve(handler)
  running.push(s)
  return s
}
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()))
})

describe('discoveryEndpoints', () => {
  it.each([
    ['http://svc.ns.svc.cluster.local:8080', 'http://svc.ns.svc.cluster.local:8080/mcp', 'http://svc.ns.svc.cluster.local:8080/sse'],
    ['http://svc:8080/', 'http://svc:8080/mcp', 'http://svc:8080/sse'],
    ['http://svc:8080/mcp', 'http://svc:8080/mcp', 'http://svc:8080/sse'],
    ['http://svc:8080/mcp/', 'http://svc:8080/mcp', 'http://svc:8080/sse'],
    ['http://svc:8080/sse', 'http://svc:8080/sse/mcp', 'http://svc:8080/sse'],
    ['https://host/base/', 'https://host/base/mcp', 'https://host/base/sse'],
    ['http://127.0.0.1:9000', 'http://127.0.0.1:9000/mcp', 'http://127.0.0.1:9000/sse'],
  ])('%s is tried at %s, then %s', (url, streamable, sse) => {
    expect(discoveryEndpoints(url)).toEqual({ streamable, sse })
  })

  it('refuses a URL that is not http(s)', () => {
    expect(() => discoveryEndpoints('file:///etc/passwd')).toThrow(TypeError)
  })
})

describe('discoverTools', () => {
  it('lists the tools of a Streamable HTTP server with capped descriptions and read-only hints', async () => {
    const s = await start(streamableHandler())
    const result = await discoverTools({ url: s.url })
    expect(result).toEqual({
      ok: true,
      transport: 'streamable-http',
      truncated: false,
      serverName: 'demo-server',
      tools: [
        { name: 'search', description: 'Searches the index', readOnly: true },
        { name: 'write_file', description: `${LONG_DESCRIPTION.slice(0, MAX_DESCRIPTION - 1)}…`, readOnly: false },
        { name: 'ping' },
      ],
    })
    if (result.ok) expect(result.tools[1]!.description!.length).toBe(MAX_DESCRIPTION)
  })

  it('accepts the URL with /mcp already on it, and a same-origin redirect', async () => {
    const inner = streamableHandler()
    const s = await start((req, res) => {
      if (req.url === '/old/mcp') return void res.writeHead(308, { location: '/mcp' }).end()
      return inner(req, res)
    })
    expect(await discoverTools({ url: `${s.url}/mcp` })).toMatchObject({ ok: true, transport: 'streamable-http' })
    expect(await discoverTools({ url: `${s.url}/old` })).toMatchObject({ ok: true, transport: 'streamable-http' })
  })

  it('falls back to the legacy SSE transport when /mcp is not there', async () => {
    const s = await start(legacySseHandler())
    const result = await discoverTools({ url: s.url })
    expect(result).toMatchObject({ ok: true, transport: 'sse', serverName: 'legacy-server', truncated: false })
    if (result.ok) expect(result.tools.map((t) => t.name)).toEqual(['search', 'write_file', 'ping'])
  })

  it('follows tools/list pages and stops at maxTools with truncated set', async () => {
    const s = await start(streamableHandler(() => pagedServer(7, 3)))
    const all = await discoverTools({ url: s.url })
    expect(all).toMatchObject({ ok: true, truncated: false })
    if (all.ok) expect(all.tools.map((t) => t.name)).toEqual(Array.from({ length: 7 }, (_, i) => `tool-${i}`))

    const some = await discoverTools({ url: s.url }, { maxTools: 4 })
    expect(some).toMatchObject({ ok: true, truncated: true })
    if (some.ok) expect(some.tools.map((t) => t.name)).toEqual(['tool-0', 'tool-1', 'tool-2', 'tool-3'])

    const exact = await discoverTools({ url: s.url }, { maxTools: 3 })
    expect(exact).toMatchObject({ ok: true, truncated: true })
    if (exact.ok) expect(exact.tools).toHaveLength(3)
  })

  it('sends the bearer token and reports a wrong or missing one as Unauthorized, never echoing it', async () => {
    const s = await start(bearer(TOKEN, streamableHandler()))
    expect(await discoverTools({ url: s.url, token: TOKEN })).toMatchObject({ ok: true, transport: 'streamable-http' })

    const missing = await discoverTools({ url: s.url })
    expect(missing).toMatchObject({ ok: false, reason: 'Unauthorized' })
    const wrong = await discoverTools({ url: s.url, token: `${TOKEN}-wrong` })
    expect(wrong).toMatchObject({ ok: false, reason: 'Unauthorized' })
    expect(JSON.stringify(wrong)).not.toContain(TOKEN.slice(0, 12))
  })

  it('never puts the token in a message, even when the server echoes it back', async () => {
    const s = await start((req, res) => {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`bad request, you sent ${req.headers.authorization}`)
    })
    const result = await discoverTools({ url: s.url, token: TOKEN })
    expect(result).toMatchObject({ ok: false, reason: 'ProtocolError' })
    expect(JSON.stringify(result)).not.toContain(TOKEN)
    expect(JSON.stringify(result)).not.toContain(TOKEN.slice(0, 12))
  })

  it('reports a port where nothing listens as Unreachable', async () => {
    const port = await closedPort()
    const result = await discoverTools({ url: `http://127.0.0.1:${port}` })
    expect(result).toMatchObject({ ok: false, reason: 'Unreachable' })
    if (!result.ok) expect(result.message).toContain('ECONNREFUSED')
  })

  it('reports a name that does not resolve as Unreachable', async () => {
    const result = await discoverTools({ url: 'http://mcp.invalid:8080' })
    expect(result).toMatchObject({ ok: false, reason: 'Unreachable' })
  })

  it('gives up on a server that never answers at the deadline (Timeout)', async () => {
    const s = await start(() => undefined) // accepts the connection, never writes
    const began = Date.now()
    const result = await discoverTools({ url: s.url }, { timeoutMs: 300 })
    expect(result).toMatchObject({ ok: false, reason: 'Timeout' })
    expect(Date.now() - began).toBeLessThan(2000)
  })

  it('gives up on a server that stalls in the middle of its answer (Timeout)', async () => {
    const s = await start((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"jsonrpc":"2.0",')
    })
    expect(await discoverTools({ url: s.url }, { timeoutMs: 300 })).toMatchObject({ ok: false, reason: 'Timeout' })
  })

  it('reports an endpoint that answers HTML as ProtocolError, on both transports', async () => {
    const s = await start((_req, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome</body></html>'))
    const result = await discoverTools({ url: s.url })
    expect(result).toMatchObject({ ok: false, reason: 'ProtocolError' })
    if (!result.ok) expect(result.message).toContain('text/html')
  })

  it('reports JSON that is not JSON-RPC as ProtocolError', async () => {
    const s = await start((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"hello":"world"}'))
    expect(await discoverTools({ url: s.url }, { timeoutMs: 1000 })).toMatchObject({ ok: false, reason: 'ProtocolError' })
  })

  it.each([
    ['with a content-length', true],
    ['streamed without one', false],
  ])('refuses an enormous body %s (TooLarge)', async (_, withLength) => {
    const body = `{"jsonrpc":"2.0","id":0,"result":{"padding":"${'a'.repeat(2 * 1024 * 1024)}"}}`
    const s = await start((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', ...(withLength ? { 'content-length': Buffer.byteLength(body) } : {}) })
      if (withLength) res.end(body)
      else {
        for (let i = 0; i < body.length; i += 65536) res.write(body.slice(i, i + 65536))
        res.end()
      }
    })
    expect(await discoverTools({ url: s.url })).toMatchObject({ ok: false, reason: 'TooLarge' })
  })

  it('does not follow a redirect to another host (Redirected)', async () => {
    const elsewhere = await start(streamableHandler())
    const s = await start((_req, res) => void res.writeHead(307, { location: `http://localhost:${elsewhere.port}/mcp` }).end())
    const result = await discoverTools({ url: s.url, token: TOKEN })
    expect(result).toMatchObject({ ok: false, reason: 'Redirected' })
    if (!result.ok) expect(result.message).toContain(`localhost:${elsewhere.port}`)
    expect(JSON.stringify(result)).not.toContain(TOKEN)
  })

  it('reports a URL it cannot use without throwing', async () => {
    expect(await discoverTools({ url: 'not a url' })).toMatchObject({ ok: false, reason: 'Unreachable' })
  })

  it('uses the fetch it is given', async () => {
    const s = await start(streamableHandler())
    const seen: string[] = []
    const result = await discoverTools({ url: s.url }, {
      fetch: async (input, init) => {
        seen.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`)
        return fetch(input, init)
      },
    })
    expect(result.ok).toBe(true)
    expect(seen[0]).toBe('POST /mcp')
  })
})

describe('discoverTools messages', () => {
  it('names the HTTP status of an endpoint that is not MCP, not the page it sent', async () => {
    const s = await start((_req, res) => void res.writeHead(404, { 'content-type': 'text/html' }).end('<html>nope</html>'))
    const result = await discoverTools({ url: s.url })
    expect(result).toEqual({ ok: false, reason: 'ProtocolError', message: `${s.url}/mcp answered HTTP 404, not MCP (legacy SSE fallback failed too)` })
  })
})

describe('discoverTools refusals', () => {
  it('reports 403 as Unauthorized', async () => {
    const s = await start((_req, res) => void res.writeHead(403, { 'content-type': 'text/plain' }).end('forbidden'))
    expect(await discoverTools({ url: s.url, token: TOKEN })).toEqual({ ok: false, reason: 'Unauthorized', message: `${s.url.slice(7)} answered 403` })
  })

  it('stops a same-origin redirect loop (Redirected)', async () => {
    const s = await start((req, res) => void res.writeHead(307, { location: `${req.url}x` }).end())
    expect(await discoverTools({ url: s.url })).toMatchObject({ ok: false, reason: 'Redirected' })
  })

  it('refuses a redirect that would turn the POST into a GET (Redirected)', async () => {
    const s = await start((_req, res) => void res.writeHead(302, { location: '/elsewhere' }).end())
    expect(await discoverTools({ url: s.url })).toMatchObject({ ok: false, reason: 'Redirected' })
  })
})
