// processesUsing(dir) finds what a node or control plane in `dir` left running, so stop can end
// it; the command that asks (`npm run cluster -- --stop --dir <dir>`: its shell and npm name the
// folder too) must never be among them, or stop kills its own caller.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { expect, it } from 'vitest'

it('finds a process naming the folder, but not the processes that asked (the caller and its parents)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kinetic-processes-using-'))
  const leftover = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', dir], { stdio: 'ignore' })
  try {
    const module = resolve('cluster/processes.ts')
    const ask = `import { processesUsing } from ${JSON.stringify(module)}; console.log(JSON.stringify({ found: processesUsing(process.argv[1]), parent: process.ppid }))`
    // A shell whose own command line names the folder runs the asking node process, as npm does.
    const r = spawnSync('sh', ['-c', `"${process.execPath}" --import tsx --input-type=module -e '${ask}' "$1"; exit $?`, 'sh', dir], { encoding: 'utf8' })
    expect(r.stderr).toBe('')
    const { found, parent } = JSON.parse(r.stdout) as { found: number[]; parent: number }
    expect(found).toContain(leftover.pid)
    expect(found).not.toContain(parent)
    expect(found).toEqual([leftover.pid])
  } finally {
    leftover.kill()
    rmSync(dir, { recursive: true, force: true })
  }
})
