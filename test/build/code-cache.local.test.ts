import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../local/free-port.js'

const ROOT = join(import.meta.dirname, '..', '..')
const run = promisify(execFile)
const outdir = mkdtempSync(join(tmpdir(), 'kinetic-code-cache-'))
const fn = join(outdir, 'functions', 'dead-letter')
let buildOutput = ''

/** Starts dist/functions/dead-letter/main.js as its Service does, waits for readiness, returns its stdout so far. */
async function startAndRead(): Promise<{ readiness: number; stdout: string }> {
  const port = await freePort()
  const env: Record<string, string | undefined> = { ...process.env, PORT: String(port), LOG_LEVEL: 'info' }
  delete env.NODE_OPTIONS
  const child = spawn(process.execPath, [join(fn, 'main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  try {
    for (let attempt = 0; attempt < 600; attempt++) {
      const readiness = await fetch(`http://127.0.0.1:${port}/health/readiness`).then((r) => r.status, () => 0)
      if (readiness !== 0) return { readiness, stdout }
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error('no readiness answer')
  } finally {
    child.kill('SIGKILL')
  }
}

const codeCacheState = (stdout: string) => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)).find((entry) => entry.codeCache)?.codeCache

beforeAll(async () => {
  // One small function keeps the build short; every function goes through the same path.
  const env = { ...process.env, NODE_OPTIONS: '' }
  const { stdout } = await run(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', outdir, '--only', 'dead-letter'], { cwd: ROOT, env })
  buildOutput = stdout
}, 300_000)

afterAll(() => rmSync(outdir, { recursive: true, force: true }))

describe('the V8 code cache of npm run build', () => {
  it('writes the CommonJS bundle, its code cache and the main.js the Service runs', () => {
    for (const file of ['main.js', 'main.js.map', 'bundle.cjs', 'bundle.cjs.map', 'bundle.cjs.cache']) expect(existsSync(join(fn, file))).toBe(true)
    expect(buildOutput).toContain(`code cache, Node ${process.versions.node}`)
  })

  it('starts from the cache, and says that V8 accepted it', async () => {
    const { readiness, stdout } = await startAndRead()
    expect(readiness).toBe(204)
    expect(codeCacheState(stdout)).toBe('accepted')
  }, 60_000)

  it.each([
    ['damaged', (valid: Buffer) => Buffer.concat([valid.subarray(0, 64), Buffer.alloc(256, 0x5a)])],
    ['from another build (cut short)', (valid: Buffer) => valid.subarray(0, Math.floor(valid.length / 2))],
  ])('starts without it when it is %s, and says it was rejected', async (_, spoil) => {
    const cache = join(fn, 'bundle.cjs.cache')
    const valid = readFileSync(cache)
    writeFileSync(cache, spoil(valid))
    try {
      const { readiness, stdout } = await startAndRead()
      expect(readiness).toBe(204)
      expect(codeCacheState(stdout)).toBe('rejected')
    } finally {
      writeFileSync(cache, valid)
    }
  }, 60_000)

  it('starts without it when it is missing', async () => {
    const cache = join(fn, 'bundle.cjs.cache')
    const valid = readFileSync(cache)
    rmSync(cache)
    try {
      const { readiness, stdout } = await startAndRead()
      expect(readiness).toBe(204)
      expect(codeCacheState(stdout)).toBe('missing')
    } finally {
      writeFileSync(cache, valid)
    }
  }, 60_000)
})
