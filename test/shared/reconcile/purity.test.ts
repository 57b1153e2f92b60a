import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared', 'reconcile')
const files = [
  'condition.ts', 'step-input.ts', 'job-builder.ts', 'memory-env.ts', 'duration.ts', 'sha256.ts', 'go-format.ts',
]

describe('step planning modules are pure', () => {
  it.each(files)('%s imports no hono, no node:* module and no value from the Kubernetes client, and reads no clock or randomness', (file) => {
    const source = readFileSync(join(dir, file), 'utf8')
    const imports = [...source.matchAll(/^import\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)]
    const bad = imports.filter(([, isType, from]) =>
      from === 'hono' || from!.startsWith('hono/') || from!.startsWith('node:')
      || (from === '@kubernetes/client-node' && !isType))
    expect(bad.map((m) => m[0])).toEqual([])
    expect(source).not.toMatch(/Date\.now|new Date\(|Math\.random|process\.env/)
  })
})
