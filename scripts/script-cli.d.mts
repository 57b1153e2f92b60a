// Types for scripts/script-cli.mjs, so TypeScript callers (benchmarks, tests) are checked against it.

/** The banner that lets an ESM bundle of CommonJS dependencies call require(). */
export declare const REQUIRE_BANNER: string

/** node:util parseArgs with --help: the values, or the exit code when the script should stop. */
export declare function readOptions(
  argv: string[],
  options: Record<string, { type: 'string' | 'boolean'; short?: string; default?: string | boolean; multiple?: boolean }>,
  usage: string,
  required?: string[],
): { exit: number; values?: undefined } | { exit?: undefined; values: Record<string, string | boolean | undefined> }
