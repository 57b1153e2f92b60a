import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared', 'schemas')
const files = readdirSync(dir).filter((f) => f.endsWith('.ts'))

describe('shared/schemas stays free of runtime dependencies', () => {
  it.each(files)('%s imports no hono, no node:* module and no value from the Kubernetes client', (file) => {
    const source = readFileSync(join(dir, file), 'utf8')
    const imports = [...source.matchAll(/^import\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)]
    const bad = imports.filter(([, isType, from]) =>
      from === 'hono' || from!.startsWith('hono/') || from!.startsWith('node:')
      || (from === '@kubernetes/client-node' && !isType))
    expect(bad.map((m) => m[0])).toEqual([])
    expect(source).not.toMatch(/Date\.now|new Date\(|Math\.random/)
  })
})
