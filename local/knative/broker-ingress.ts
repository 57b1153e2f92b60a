import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Broker } from './broker.js'
import { fromHttp } from './cloud-event.js'

/** The HTTP face of the local Brokers: `POST /<namespace>/<broker>`, like broker-ingress. */
export interface BrokerIngressServer {
  url: string
  close(): Promise<void>
}

/**
 * Serves the Brokers over HTTP on 127.0.0.1 so functions can send their own events there
 * (`K_SINK`). Invalid CloudEvent: 400; unknown broker: 404; otherwise the Broker's status.
 */
export async function startBrokerIngress(brokers: Map<string, Broker>, port = 0): Promise<BrokerIngressServer> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      void (async () => {
        const [, ns, name, extra] = (req.url ?? '').split('?')[0]?.split('/') ?? []
        if (req.method !== 'POST') return end(res, 405)
        const broker = ns && name && extra === undefined ? brokers.get(`${ns}/${name}`) : undefined
        if (!broker) return end(res, 404)
        const headers: Record<string, string> = {}
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v
        let event
        try {
          event = fromHttp(headers, Buffer.concat(chunks).toString('utf8'))
        } catch {
          return end(res, 400)
        }
        end(res, await broker.ingress(event))
      })().catch(() => end(res, 500))
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const { port: bound } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${bound}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

function end(res: http.ServerResponse, status: number): void {
  if (res.headersSent) return
  res.writeHead(status)
  res.end()
}
