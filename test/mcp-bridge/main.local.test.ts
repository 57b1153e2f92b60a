import { execFile, spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { parseBridgeConfig } from '../../mcp-bridge/config.js'
import { discoverTools } from '../../shared/mcp/discovery.js'
import { closedPort } from '../mcp/discovery-servers.js'
import { runAsContainer, startFakeAttach, type FakeAttach } from './fake-attach.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const FIXTURE = join(ROOT, 'test', 'mcp-bridge', 'fixtures', 'stdio-server.ts')
const work = mkdtempSync(join(tmpdir(), 'kinetic-bridge-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

describe('parseBridgeConfig', () => {
  const base = { MCP_BRIDGE_PORT: '8080', POD_NAME: 'files-abc', POD_NAMESPACE: 'tools' }

  it('reads the pod, the port and defaults', () => {
    expect(parseBridgeConfig(base)).toEqual({ config: {
      port: 8080, pod: 'files-abc', namespace: 'tools', container: 'mcp-server',
      maxLineBytes: 8 * 1024 * 1024, requestTimeoutMs: 300_000, attachTimeoutMs: 120_000,
    } })
    expect(parseBridgeConfig({ ...base, MCP_BRIDGE_CONTAINER: 'srv', AUTH_TOKEN: 't1' })).toMatchObject({ config: { container: 'srv', authToken: 't1' } })
    expect(parseBridgeConfig({ ...base, MCP_BRIDGE_AUTH_TOKEN: 't2', AUTH_TOKEN: 't1' })).toMatchObject({ config: { authToken: 't2' } })
  })

  it('lists every problem and never a token value', () => {
    const result = parseBridgeConfig({ MCP_BRIDGE_PORT: '70000', MCP_BRIDGE_REQUEST_TIMEOUT_MS: 'soon', AUTH_TOKEN: 'hidden-value' })
    expect(result).toEqual({ errors: [
      'MCP_BRIDGE_PORT must be an integer from 1 to 65535',
      'POD_NAME is required (downward API metadata.name)',
      'POD_NAMESPACE is required (downward API metadata.namespace)',
      'MCP_BRIDGE_REQUEST_TIMEOUT_MS must be an integer from 1 to 9007199254740991',
    ] })
  })
})

function kubeconfig(fake: FakeAttach): string {
  const file = join(work, `kubeconfig-${fake.port}.yaml`)
  writeFileSync(file, [
    'apiVersion: v1', 'kind: Config', 'current-context: fake',
    'clusters:', `- name: fake`, '  cluster:', `    server: ${fake.url}`, '    insecure-skip-tls-verify: true',
    'users:', '- name: bridge', '  user:', '    token: sa-token-abc',
    'contexts:', '- name: fake', '  context:', '    cluster: fake', '    user: bridge',
  ].join('\n'))
  return file
}

async function startProgram(command: string[], env: Record<string, string>): Promise<{ proc: ChildProcess; exit: Promise<number | null>; logs: () => string }> {
  const proc = spawn(process.execPath, command, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let logs = ''
  proc.stdout!.on('data', (c: Buffer) => { logs += c.toString() })
  proc.stderr!.on('data', (c: Buffer) => { logs += c.toString() })
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  cleanups.push(() => proc.kill())
  return { proc, exit, logs: () => logs }
}

async function readiness(url: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  for (;;) {
    const status = await fetch(`${url}/health/readiness`).then((r) => r.status, () => 0)
    if (status === 200) return
    if (Date.now() > end) throw new Error(`bridge not ready at ${url} (last status ${status})`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function endToEnd(command: string[]): Promise<void> {
  let container: ChildProcessWithoutNullStreams | undefined
  const fake = await startFakeAttach((conn) => {
    container = runAsContainer(conn, process.execPath, ['--import', 'tsx', FIXTURE], ROOT)
    cleanups.push(() => container!.kill())
  })
  cleanups.push(() => fake.close())
  const port = await closedPort()
  const program = await startProgram(command, {
    MCP_BRIDGE_PORT: String(port), MCP_BRIDGE_CONTAINER: 'mcp-server', POD_NAME: 'files-abc', POD_NAMESPACE: 'tools',
    KUBECONFIG: kubeconfig(fake), LOG_LEVEL: 'info', MCP_BRIDGE_AUTH_TOKEN: 'client-token-xyz',
  })
  const url = `http://127.0.0.1:${port}`
  await readiness(url)
  expect(Object.fromEntries(fake.connections[0]!.request.query)).toMatchObject({ container: 'mcp-server', stdin: 'true', stdout: 'true', stderr: 'false', tty: 'false' })
  expect(fake.connections[0]!.request.path).toBe('/api/v1/namespaces/tools/pods/files-abc/attach')
  const result = await discoverTools({ url, token: 'client-token-xyz' }, { timeoutMs: 10_000 })
  expect(result).toMatchObject({ ok: true, transport: 'streamable-http', serverName: 'stdio-fixture' })

  container!.kill()
  expect(await program.exit).toBe(1)
  expect(program.logs()).toContain('The MCP server stream ended')
  expect(program.logs()).not.toContain('client-token-xyz')
  expect(program.logs()).not.toContain('sa-token-abc')
}

describe('the mcp-bridge program', () => {
  it('exits 2 and names what is missing when it is not configured', async () => {
    const program = await startProgram(['--import', 'tsx', 'mcp-bridge/main.ts'], {})
    expect(await program.exit).toBe(2)
    expect(program.logs()).toContain('POD_NAME is required')
  }, 30_000)

  it('exits 1 when the API server refuses the attach for longer than the attach timeout', async () => {
    const fake = await startFakeAttach(() => undefined, () => 403)
    cleanups.push(() => fake.close())
    const program = await startProgram(['--import', 'tsx', 'mcp-bridge/main.ts'], {
      MCP_BRIDGE_PORT: String(await closedPort()), POD_NAME: 'p', POD_NAMESPACE: 'n', KUBECONFIG: kubeconfig(fake), MCP_BRIDGE_ATTACH_TIMEOUT_MS: '1500',
    })
    expect(await program.exit).toBe(1)
    expect(program.logs()).toContain('Could not attach to the MCP server container')
    expect(program.logs()).toContain('403')
  }, 30_000)

  it('npm run mcp-bridge: attaches through the API server, serves the stdio server, exits 1 when it ends', async () => {
    await endToEnd(['--import', 'tsx', 'mcp-bridge/main.ts'])
  }, 60_000)

  it('the bundle npm run build writes (dist/mcp-bridge/main.js) does the same from outside the repository', async () => {
    const outdir = join(work, 'dist')
    await promisify(execFile)(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', outdir], { cwd: ROOT })
    await endToEnd([join(outdir, 'mcp-bridge', 'main.js')])
  }, 600_000)
})
