import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const BIN = join(import.meta.dirname, '../../bin/kinetic.mjs')
const elsewhere = mkdtempSync(join(tmpdir(), 'kinetic-bin-'))
afterAll(() => rmSync(elsewhere, { recursive: true, force: true }))

describe('bin/kinetic.mjs as a real process', () => {
  it('prints help and exits 0, from a directory outside the package', async () => {
    const { stdout } = await run(process.execPath, [BIN, '--help'], { cwd: elsewhere, env: { PATH: process.env.PATH ?? '' } })
    expect(stdout).toContain('Usage:\n  kinetic <command>')
  })

  it('runs as the kn plugin kn-kinetic (a symlink on PATH, started through its shebang)', async () => {
    const plugin = join(elsewhere, 'kn-kinetic')
    symlinkSync(BIN, plugin)
    const { stdout } = await run(plugin, ['status', '--help'], { cwd: elsewhere, env: { PATH: `${elsewhere}:${process.env.PATH ?? ''}` } })
    expect(stdout).toContain('Usage:\n  kn kinetic status <workflow> [flags]')
  })

  it('exits 2 on a usage error and 1 on a failure, with the message on stderr', async () => {
    const usage = await run(process.execPath, [BIN, 'approve', 'only-one'], { cwd: elsewhere }).catch((e: { code: number; stderr: string }) => e)
    expect(usage).toMatchObject({ code: 2, stderr: expect.stringContaining('missing argument') })
    const failure = await run(process.execPath, [BIN, 'agents'], { cwd: elsewhere, env: { PATH: process.env.PATH ?? '', HOME: elsewhere } })
      .catch((e: { code: number; stderr: string }) => e)
    expect(failure).toMatchObject({ code: 1, stderr: 'error: no kubeconfig found; set KUBECONFIG or run `npm start`\n' })
  })
})
