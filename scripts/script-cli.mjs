// What the repository's build scripts share: reading their command line the same way, and the
// banner that lets an ESM bundle of CommonJS dependencies call require().
import { parseArgs } from 'node:util'

/**
 * Several bundled dependencies are CommonJS and call require(); in an ESM bundle it must be
 * recreated, with __filename and __dirname beside it.
 */
export const REQUIRE_BANNER = [
  "import { createRequire as __kineticCreateRequire } from 'node:module';",
  "import { fileURLToPath as __kineticFileURLToPath } from 'node:url';",
  "import { dirname as __kineticDirname } from 'node:path';",
  'const require = __kineticCreateRequire(import.meta.url);',
  'const __filename = __kineticFileURLToPath(import.meta.url);',
  'const __dirname = __kineticDirname(__filename);',
].join('\n')

/**
 * Parses `argv` with node:util's parseArgs (`--help` added). Returns the values, or the exit code
 * when the script should stop: 0 after printing the usage for --help, 2 after saying what is
 * wrong (an unknown option, a missing required one).
 */
export function readOptions(argv, options, usage, required = []) {
  let values
  try {
    ;({ values } = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', default: false } } }))
  } catch (error) {
    process.stderr.write(`${error.message}\n${usage}\n`)
    return { exit: 2 }
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`)
    return { exit: 0 }
  }
  const missing = required.filter((name) => !values[name])
  if (missing.length > 0) {
    const named = missing.map((name) => `--${name}`)
    process.stderr.write(`${named.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} required\n${usage}\n`)
    return { exit: 2 }
  }
  return { values }
}
