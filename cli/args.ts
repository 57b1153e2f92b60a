import { UsageError } from './errors.js'

/** One flag a command accepts. */
export interface FlagSpec {
  /** Long name without dashes, e.g. `param`. */
  name: string
  /** One-letter alias, e.g. `p`. */
  short?: string
  /** Takes a value (`--param k=v`); otherwise a switch. */
  value?: string
  repeatable?: boolean
  description: string
}

/** A parsed command line: positionals, and each flag's values (a switch has `['true']`). */
export interface ParsedArgs {
  positionals: string[]
  flags: Map<string, string[]>
}

/** Flags every command takes. */
export const GLOBAL_FLAGS: FlagSpec[] = [
  { name: 'kubeconfig', value: 'path', description: 'kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)' },
  { name: 'context', value: 'name', description: 'kubeconfig context to use (default: the current context)' },
  { name: 'namespace', short: 'n', value: 'ns', description: "namespace (default: the context's namespace, else default)" },
  { name: 'output', short: 'o', value: 'json|yaml', description: 'print objects as JSON or YAML instead of a table' },
  { name: 'help', short: 'h', description: 'show help' },
  { name: 'version', description: 'print the version' },
]

function find(specs: readonly FlagSpec[], token: string): FlagSpec | undefined {
  return token.startsWith('--')
    ? specs.find((s) => s.name === token.slice(2))
    : specs.find((s) => s.short !== undefined && s.short === token.slice(1))
}

/**
 * Pure: parses `argv` against flag specs. Accepts `--flag value`, `--flag=value`, `-f value`,
 * `-f=value`, flags before and after positionals, and `--` to end flags. Unknown flags, missing
 * values and repeated single-valued flags are UsageErrors.
 */
export function parseArgs(argv: readonly string[], specs: readonly FlagSpec[], command: string): ParsedArgs {
  const positionals: string[] = []
  const flags = new Map<string, string[]>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1))
      break
    }
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const token = eq > 0 ? arg.slice(0, eq) : arg
    const spec = find(specs, token)
    if (!spec) throw new UsageError(`unknown flag ${token} for "${command}"`)
    let value: string
    if (spec.value === undefined) {
      if (eq > 0) throw new UsageError(`flag ${token} takes no value`)
      value = 'true'
    } else if (eq > 0) {
      value = arg.slice(eq + 1)
    } else {
      const next = argv[i + 1]
      if (next === undefined) throw new UsageError(`flag ${token} needs a value (${spec.value})`)
      value = next
      i++
    }
    const seen = flags.get(spec.name)
    if (seen && !spec.repeatable && spec.value !== undefined && seen[0] !== value) {
      throw new UsageError(`flag --${spec.name} given twice`)
    }
    flags.set(spec.name, seen && spec.repeatable ? [...seen, value] : [value])
  }
  return { positionals, flags }
}

/**
 * Pure: splits the global flags that come before the command from the rest, so
 * `kinetic -n team run x` and `kinetic run x -n team` mean the same.
 */
export function splitCommand(argv: readonly string[]): { leading: string[]; command: string | undefined; rest: string[] } {
  const leading: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith('-') || arg === '-') return { leading, command: arg, rest: argv.slice(i + 1) }
    leading.push(arg)
    const spec = arg.includes('=') ? undefined : find(GLOBAL_FLAGS, arg)
    if (spec?.value !== undefined && i + 1 < argv.length) leading.push(argv[++i]!)
  }
  return { leading, command: undefined, rest: [] }
}

/** The last value of a flag, if given. */
export function flag(args: ParsedArgs, name: string): string | undefined {
  const values = args.flags.get(name)
  return values?.[values.length - 1]
}

/** Whether a switch was given. */
export function has(args: ParsedArgs, name: string): boolean {
  return args.flags.has(name)
}

/** Pure: `--param k=v` values as a record; a value may contain `=`; `k=` is an empty string. */
export function parseParams(values: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {}
  for (const v of values) {
    const eq = v.indexOf('=')
    if (eq <= 0) throw new UsageError(`--param needs key=value, got "${v}"`)
    params[v.slice(0, eq)] = v.slice(eq + 1)
  }
  return params
}
