import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The pure core may not do I/O or read the clock: the time comes in as an argument, so the same
 * state always gives the same plan. Pure by place, not by list: every file of `shared/core/`,
 * `shared/schemas/` and of any `plan/` folder (a kind's planning, e.g. `shared/workflow/plan/`),
 * and the console's views.
 */
const shared = join(import.meta.dirname, '..', '..', 'shared')
const walk = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
  const path = join(dir, name)
  return statSync(path).isDirectory() ? walk(path) : name.endsWith('.ts') ? [path] : []
})
const pureByPlace = (file: string) => /^(core|schemas)\//.test(file) || /(^|\/)plan\//.test(file)
const files = walk(shared).map((path) => relative(shared, path)).filter(pureByPlace)
  // The console's views: markup, times, the run's view model and its DAG drawing, its configuration and address ranges.
  .concat(['html.ts', 'phase.ts', 'time.ts', 'action-form.ts', 'shell.ts', 'run/run-view.ts', 'run/dag-layout.ts', 'run/dag-svg.ts', 'auth/cidr.ts', 'auth/config.ts'].map((f) => `console/${f}`))
  // The quantity parser recipe policies compare bounds with.
  .concat(['quantity.ts'])

describe('the pure core', () => {
  it('covers every planning folder', () => {
    for (const kind of ['workflow', 'template', 'recipe', 'agent', 'autonomy', 'mcp', 'llm', 'memory']) {
      expect(files.some((f) => f.startsWith(`${kind}/plan/`)), kind).toBe(true)
    }
  })

  it.each(files)('shared/%s imports no hono, no node:* module and no value from the Kubernetes client, and reads no clock, randomness, network, timers or environment', (file) => {
    const source = readFileSync(join(shared, file), 'utf8')
    const imports = [...source.matchAll(/^import\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)]
    const bad = imports.filter(([, isType, from]) =>
      from === 'hono' || from!.startsWith('hono/') || from!.startsWith('node:')
      || (from === '@kubernetes/client-node' && !isType))
    expect(bad.map((m) => m[0])).toEqual([])
    expect(source).not.toMatch(/Date\.now\(|new Date\(\)|Math\.random|crypto\.|process\.env|\bfetch\(|setTimeout\(/)
  })
})
