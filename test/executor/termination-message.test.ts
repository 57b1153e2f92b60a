import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { leaveTerminationMessage, TERMINATION_MESSAGE_LIMIT } from '../../executor/termination-message.js'

const dirs: string[] = []
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }) })

function kubeletFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'termination-test-'))
  dirs.push(dir)
  const path = join(dir, 'termination-log')
  writeFileSync(path, '')
  return path
}

describe('the termination message', () => {
  it('holds the OUTPUT line where the kubelet made the file for it', () => {
    const path = kubeletFile()
    leaveTerminationMessage('OUTPUT:{"response":"done"}', { KINETIC_TERMINATION_MESSAGE_PATH: path })
    expect(readFileSync(path, 'utf8')).toBe('OUTPUT:{"response":"done"}')
  })

  it('is left empty for a line the kubelet would cut, so the engine reads the whole line from the log', () => {
    const path = kubeletFile()
    leaveTerminationMessage(`OUTPUT:{"response":"${'x'.repeat(TERMINATION_MESSAGE_LIMIT)}"}`, { KINETIC_TERMINATION_MESSAGE_PATH: path })
    expect(readFileSync(path, 'utf8')).toBe('')
  })

  it('is not created where no kubelet made the file (a laptop, a custom runtime)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'termination-test-'))
    dirs.push(dir)
    const path = join(dir, 'absent')
    leaveTerminationMessage('OUTPUT:{}', { KINETIC_TERMINATION_MESSAGE_PATH: path })
    expect(() => readFileSync(path)).toThrow()
  })
})
