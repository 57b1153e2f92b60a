import { Writable } from 'node:stream'
import { CloudEvent, HTTP } from 'cloudevents'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/dead-letter/index.js'
import { MAX_LOGGED_DATA_BYTES } from '../../functions/dead-letter/record.js'

function capturedLogger() {
  const lines: Array<Record<string, any>> = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      done()
    },
  })
  return { log: pino({ level: 'info' }, sink), lines }
}

function deadLettered(data: unknown, extensions: Record<string, string | number> = {}) {
  const message = HTTP.binary(new CloudEvent({
    id: 'ev-1',
    type: 'dev.knative.apiserver.resource.update',
    source: 'https://10.96.0.1:443',
    subject: '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/research',
    datacontenttype: 'application/json',
    data,
    kind: 'Workflow',
    name: 'research',
    namespace: 'ai-agents',
    kineticsource: 'workflows',
    knativeerrordest: 'http://workflow-changed.kinetic-system.svc.cluster.local',
    knativeerrorcode: 500,
    knativeerrordata: Buffer.from('{"error":"Error","message":"boom"}').toString('base64'),
    ...extensions,
  }))
  return { method: 'POST', headers: message.headers as Record<string, string>, body: message.body as string }
}

describe('dead-letter', () => {
  it('logs a dead-lettered event with the decoded failure and the object it was about, and answers 202 with no body', async () => {
    const { log, lines } = capturedLogger()
    const res = await createApp({ log }).request('/', deadLettered({ metadata: { name: 'research' } }))

    expect(res.status).toBe(202)
    expect(await res.text()).toBe('')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      level: 50,
      msg: 'Gave up delivering event',
      ceId: 'ev-1',
      ceType: 'dev.knative.apiserver.resource.update',
      ceSubject: '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/research',
      errorDest: 'http://workflow-changed.kinetic-system.svc.cluster.local',
      errorCode: 500,
      errorData: '{"error":"Error","message":"boom"}',
      extensions: { kind: 'Workflow', name: 'research', namespace: 'ai-agents', kineticsource: 'workflows' },
      data: { metadata: { name: 'research' } },
    })
    expect(lines[0]!.extensions).not.toHaveProperty('knativeerrorcode')
  })

  it('logs only the size of data too large to log whole', async () => {
    const { log, lines } = capturedLogger()
    const big = { spec: { prompt: 'x'.repeat(MAX_LOGGED_DATA_BYTES) } }
    const res = await createApp({ log }).request('/', deadLettered(big))

    expect(res.status).toBe(202)
    expect(lines[0]).not.toHaveProperty('data')
    expect(lines[0]!.dataBytes).toBe(Buffer.byteLength(JSON.stringify(big)))
  })

  it('reports no error code when the delivery failed without an HTTP status', async () => {
    const { log, lines } = capturedLogger()
    const request = deadLettered({})
    delete request.headers['ce-knativeerrorcode']
    expect((await createApp({ log }).request('/', request)).status).toBe(202)
    expect(lines[0]!.errorCode).toBeUndefined()
  })

  it('accepts structured-mode events too', async () => {
    const { log, lines } = capturedLogger()
    const message = HTTP.structured(new CloudEvent({ id: 'ev-2', type: 'dev.knative.sources.ping', source: '/ping', data: { reason: 'resync' }, kineticsource: 'resync' }))
    const res = await createApp({ log }).request('/', { method: 'POST', headers: message.headers as Record<string, string>, body: message.body as string })

    expect(res.status).toBe(202)
    expect(lines[0]).toMatchObject({ ceId: 'ev-2', ceType: 'dev.knative.sources.ping', data: { reason: 'resync' }, extensions: { kineticsource: 'resync' } })
  })

  it('answers 400 to a request that is not a CloudEvent and still logs what arrived', async () => {
    const { log, lines } = capturedLogger()
    const res = await createApp({ log }).request('/', { method: 'POST', headers: { 'content-type': 'application/json', 'ce-type': 'half' }, body: '{}' })

    expect(res.status).toBe(400)
    expect(lines[0]).toMatchObject({ msg: 'Gave up delivering a request that is not a valid CloudEvent', headers: { 'ce-type': 'half', 'content-type': 'application/json' } })
  })
})
