import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { CloudEvent, HTTP } from 'cloudevents'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startStubApiServer, timeToFirstAnswer, unrelatedJobEvent } from '../../bench/cold-start.js'
import { median } from '../../bench/stats.js'
import { functionNames, ROOT } from './manifests.js'

const run = promisify(execFile)
// Outside the repository, so a bundle that still imports from node_modules cannot start.
const outdir = mkdtempSync(join(tmpdir(), 'kinetic-bundle-'))
let buildOutput = ''

beforeAll(async () => {
  const { stdout } = await run(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', outdir], { cwd: ROOT })
  buildOutput = stdout
}, 600_000)

afterAll(() => rmSync(outdir, { recursive: true, force: true }))

describe('npm run build', () => {
  it.each(functionNames().map((n) => [n]))('bundles functions/%s/main.ts to the file its Service runs', (name) => {
    expect(existsSync(join(outdir, 'functions', name, 'main.js'))).toBe(true)
    expect(existsSync(join(outdir, 'functions', name, 'main.js.map'))).toBe(true)
    expect(buildOutput).toContain(`functions/${name}/main.js`)
  })

  it('a bundle starts outside the repository and answers a dead-lettered CloudEvent with 202', async () => {
    const message = HTTP.binary(new CloudEvent({ type: 'dev.knative.sources.ping', source: '/ping', data: { reason: 'resync' }, knativeerrorcode: 503 }))
    const result = await timeToFirstAnswer(
      { name: 'dead-letter', script: join(outdir, 'functions', 'dead-letter', 'main.js'), env: { LOG_LEVEL: 'silent' } },
      { headers: message.headers as Record<string, string>, body: message.body as string },
    )
    expect(result.status).toBe(202)
  }, 30_000)
})

describe('cold-start bench mechanism', () => {
  it('times a bare node:http server from spawn to its first 202', async () => {
    const result = await timeToFirstAnswer({ name: 'bare', script: join(ROOT, 'bench', 'bare-server.mjs'), env: {} }, unrelatedJobEvent())
    expect(result.status).toBe(202)
    expect(result.ms).toBeGreaterThan(0)
  }, 30_000)

  it('reports a server that exits before answering instead of waiting for it', async () => {
    const script = join(outdir, 'exits.mjs')
    writeFileSync(script, "console.error('no config'); process.exit(3)")
    await expect(timeToFirstAnswer({ name: 'broken', script, env: {} }, unrelatedJobEvent())).rejects.toThrow(/broken exited with 3 before answering: no config/)
  }, 30_000)

  it('probes with a Job event the jobs source would send, for a Job Kinetic does not own', () => {
    const { headers, body } = unrelatedJobEvent()
    expect(headers).toMatchObject({ 'ce-type': 'dev.knative.apiserver.resource.update', 'ce-kineticsource': 'jobs', 'ce-kind': 'Job' })
    expect(JSON.parse(body).metadata.labels).not.toHaveProperty(['purko.io/workflow'])
  })

  it('gives functions a stub API server where every list is empty and everything else is 404, and counts the calls', async () => {
    const api = await startStubApiServer()
    try {
      const list = await fetch(`${api.url}/apis/purko.io/v1alpha1/workflows`)
      expect(list.status).toBe(200)
      expect((await list.json()).items).toEqual([])
      expect((await fetch(`${api.url}/api/v1/namespaces/ai-agents/pods?labelSelector=job-name%3Dx`)).status).toBe(200)
      expect((await fetch(`${api.url}/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/research`)).status).toBe(404)
      expect(api.requests()).toBe(3)
    } finally {
      await api.close()
    }
  })

  it.each([[[3, 1, 2], 2], [[4, 1, 3, 2], 2.5], [[7], 7]])('median of %j is %d', (values, expected) => {
    expect(median(values)).toBe(expected)
  })
})
