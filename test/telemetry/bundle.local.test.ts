import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, renameSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CloudEvent, HTTP } from 'cloudevents'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../local/free-port.js'
import { eventually } from '../support/eventually.js'

/**
 * The built function (scripts/build.mjs, as the image runs it) keeps the OpenTelemetry SDK out of
 * its bundle and code cache: a file of its own, dist/telemetry/otlp.cjs, required only with an
 * OTLP endpoint set.
 */
const ROOT = join(import.meta.dirname, '../..')
let out = ''
const children: ChildProcess[] = []

beforeAll(() => {
  out = mkdtempSync(join(tmpdir(), 'kinetic-telemetry-build-'))
  const built = spawnSync(process.execPath, ['scripts/build.mjs', '--only', 'dead-letter', '--outdir', out], { cwd: ROOT, encoding: 'utf8' })
  expect(built.status, built.stderr).toBe(0)
}, 120_000)
afterAll(() => { for (const c of children) c.kill('SIGKILL') })

async function start(env: Record<string, string>): Promise<number> {
  const port = await freePort()
  const child = spawn(process.execPath, [join(out, 'functions', 'dead-letter', 'main.js')], { env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...env }, stdio: 'ignore' })
  children.push(child)
  return port
}

async function deliver(port: number): Promise<number> {
  const m = HTTP.binary(new CloudEvent({ id: 'e1', type: 'dev.example.lost', source: 'test', data: {} }))
  return eventually('an answer', async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers: m.headers as Record<string, string>, body: m.body as string })).status
    } catch {
      return undefined
    }
  }, 20_000, 50)
}

describe('a built function and the tracing SDK', () => {
  it('carries no SDK in its bundle', () => {
    const bundle = readFileSync(join(out, 'functions', 'dead-letter', 'bundle.cjs'), 'utf8')
    expect(bundle).not.toContain('OTLPTraceExporter')
    expect(bundle).toContain('telemetry/otlp.cjs')
    expect(readFileSync(join(out, 'telemetry', 'otlp.cjs'), 'utf8')).toContain('OTLPTraceExporter')
  })

  it('exports its spans over OTLP to the endpoint set, from the SDK file beside it', async () => {
    const paths: string[] = []
    const collector = createServer((req, res) => { paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`); req.resume().on('end', () => res.writeHead(200).end()) })
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve))
    try {
      const port = await start({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}` })
      expect(await deliver(port)).toBe(202)
      await eventually('an OTLP export', () => paths.length > 0, 10_000)
      expect(paths[0]).toBe('POST /v1/traces application/x-protobuf')
    } finally {
      collector.close()
    }
  }, 30_000)

  it('with tracing off never requires the SDK file: it answers even when the file is gone', async () => {
    renameSync(join(out, 'telemetry', 'otlp.cjs'), join(out, 'telemetry', 'otlp.cjs.away'))
    const port = await start({})
    expect(await deliver(port)).toBe(202)
    expect(await deliver(port)).toBe(202)
  }, 30_000)
})
