import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { httpKineticEvents, kineticEventsFor } from '../../shared/engine/kinetic-events.js'
import { createLogger } from '../../shared/log.js'

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
const wf = { kind: 'Workflow', metadata: { namespace: 'ns', name: 'wf' } }
const started = [{ kind: 'run.started', reason: 'RunStarted', message: 'Started run' }]

let url = ''
const received: IncomingHttpHeaders[] = []
const server = createServer((req, res) => {
  received.push(req.headers)
  req.resume().on('end', () => res.writeHead(202).end())
})
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('the CloudEvents Kinetic emits', () => {
  it('carry the run\'s trace in the distributed tracing extension, and leave the id unchanged', () => {
    const [traced] = kineticEventsFor('/kinetic', wf, 'run-1', started, TP)
    const [plain] = kineticEventsFor('/kinetic', wf, 'run-1', started)
    expect(traced?.traceparent).toBe(TP)
    expect(plain?.traceparent).toBeUndefined()
    expect(traced?.id).toBe(plain?.id)
  })

  it('reach the Broker with the extension and the W3C header, so Knative\'s own spans join the trace', async () => {
    await httpKineticEvents(url, '/kinetic', createLogger('test', 'silent')).publish(wf, 'run-1', started, TP)
    expect(received.at(-1)).toMatchObject({ 'ce-traceparent': TP, traceparent: TP })
  })
})
