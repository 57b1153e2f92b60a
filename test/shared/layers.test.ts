// The product's layers, read from its imports: no import runs up a layer. Top folders first (the
// shared core imports nothing above it; functions, the executor, the CLI and the MCP bridge only
// the core), then inside the core: pure planning imports none of the shell that does I/O.
import { describe, expect, it } from 'vitest'
import { importGraph } from '../support/import-graph.js'

/** What each top folder may import besides itself. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  shared: [],
  executor: ['shared'],
  'mcp-bridge': ['shared'],
  functions: ['shared'],
  cli: ['shared'],
  // The embedded plane runs step Jobs with the executor's own process contract.
  local: ['shared', 'executor'],
  scripts: ['shared', 'local'],
  cluster: ['shared', 'scripts', 'local'],
  // The command-line entry points start whichever part they name.
  bin: ['shared', 'cli', 'functions', 'executor', 'local', 'scripts', 'cluster', 'mcp-bridge'],
}

/** Pure planning, by place: the core's contract, the schemas and every kind's `plan/` folder. */
const isPure = (file: string) => /^shared\/(core|schemas)\//.test(file) || /^shared\/[^/]+\/plan\//.test(file)

/** The shell that does I/O: the engine that drives planners, each kind's controller, the API client, HTTP, span export. */
const isShell = (file: string) =>
  /^shared\/(engine|http|kube\/client)\//.test(file) || /^shared\/[^/]+\/controller\.ts$/.test(file)
  || ['shared/kube/client.ts', 'shared/telemetry/exporter.ts', 'shared/telemetry/otlp.ts'].includes(file)

const top = (file: string) => file.split('/')[0] as string

describe('the layers', () => {
  const graph = importGraph()

  it('no top folder imports one above it', () => {
    const upward: string[] = []
    for (const [file, deps] of graph) {
      const allowed = MAY_IMPORT[top(file)]
      if (!allowed) throw new Error(`no layer rule for ${top(file)}/ (${file})`)
      for (const dep of deps) if (top(dep) !== top(file) && !allowed.includes(top(dep))) upward.push(`${file} -> ${dep}`)
    }
    expect(upward).toEqual([])
  })

  it('pure planning imports none of the shell that does I/O', () => {
    const pure = [...graph.keys()].filter(isPure)
    expect(pure.length).toBeGreaterThan(100)
    const intoShell = pure.flatMap((file) => graph.get(file)!.filter(isShell).map((dep) => `${file} -> ${dep}`))
    expect(intoShell).toEqual([])
  })

  it('tells an upward import from an allowed one', () => {
    expect(isPure('shared/recipe/plan/deploy-plan.ts') && isShell('shared/engine/controller.ts')).toBe(true)
    expect(isPure('shared/workflow/controller.ts')).toBe(false)
    expect(MAY_IMPORT.shared).toEqual([])
  })
})
