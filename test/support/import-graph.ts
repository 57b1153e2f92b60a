// The product's import graph, read from its sources: relative imports only (packages cannot import
// us); `import type` counts too, since a reader follows those as well. Used by the import-cycle
// and layering tests.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

export const ROOT = join(import.meta.dirname, '../..')
/** The product's top folders. */
export const FOLDERS = ['shared', 'functions', 'local', 'executor', 'cli', 'mcp-bridge', 'cluster', 'scripts', 'bin']

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sources(path)
    return /\.(ts|mts|mjs)$/.test(name) && !/\.d\.m?ts$/.test(name) ? [path] : []
  })
}

/** Pure: the relative specifiers a module imports or re-exports (comments left out). */
export function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
  const found = [...code.matchAll(/(?:^|[\s;}])(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)]
  return found.map((m) => (m[1] ?? m[2]) as string)
}

/** Every product module (path from the repository root) and the product modules it imports. */
export function importGraph(): Map<string, string[]> {
  const files = new Set(FOLDERS.flatMap((f) => sources(join(ROOT, f))).map((p) => relative(ROOT, p)))
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const deps = importsOf(readFileSync(join(ROOT, file), 'utf8')).flatMap((spec) => {
      const target = normalize(join(dirname(file), spec))
      const candidate = [target, target.replace(/\.js$/, '.ts'), target.replace(/\.mjs$/, '.mts'), `${target}.ts`].find((c) => files.has(c))
      return candidate ? [candidate] : []
    })
    graph.set(file, deps)
  }
  return graph
}
