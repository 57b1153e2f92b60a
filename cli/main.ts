import { readFileSync } from 'node:fs'
import { flag, GLOBAL_FLAGS, has, parseArgs, splitCommand, type ParsedArgs } from './args.js'
import { Session, type Command } from './command.js'
import { CliError, UsageError } from './errors.js'
import { commandHelp, generalHelp } from './help.js'
import { resolveIo, type CliIo } from './io.js'
import { outputFormat } from './output.js'
import { agentsCommand } from './commands/agents.js'
import { cancelCommand } from './commands/cancel.js'
import { approveCommand, denyCommand } from './commands/decide.js'
import { eventsCommand } from './commands/events.js'
import { logsCommand } from './commands/logs.js'
import { rerunCommand } from './commands/rerun.js'
import { runCommand } from './commands/run.js'
import { statusCommand, watchCommand } from './commands/status.js'
import { triggerCommand } from './commands/trigger.js'

export type { CliIo } from './io.js'

/** Every command, in the order help lists them. */
export const COMMANDS: readonly Command[] = [
  runCommand, triggerCommand, approveCommand, denyCommand, cancelCommand, rerunCommand,
  logsCommand, statusCommand, watchCommand, eventsCommand, agentsCommand,
]

/** The package version (package.json next to the CLI). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string }
  return pkg.version ?? '0.0.0'
}

function merge(a: ParsedArgs, b: ParsedArgs): ParsedArgs {
  const flags = new Map(a.flags)
  for (const [k, v] of b.flags) flags.set(k, [...(flags.get(k) ?? []), ...v])
  return { positionals: [...a.positionals, ...b.positionals], flags }
}

/**
 * Runs the CLI on `argv` (without node and the script) and returns the exit code: 0 ok,
 * 1 failure (an actionable message on stderr), 2 usage error.
 */
export async function main(argv: readonly string[], cliIo: CliIo): Promise<number> {
  const io = resolveIo(cliIo)
  const program = io.programName
  let command: Command | undefined
  try {
    const split = splitCommand(argv)
    const leading = parseArgs(split.leading, GLOBAL_FLAGS, program)
    if (split.command === undefined) {
      if (has(leading, 'version')) {
        io.stdout(`${version()}\n`)
        return 0
      }
      if (has(leading, 'help')) {
        io.stdout(generalHelp(program, COMMANDS))
        return 0
      }
      io.stderr(generalHelp(program, COMMANDS))
      return 2
    }
    if (split.command === 'help') {
      const topic = split.rest.find((a) => !a.startsWith('-'))
      const target = topic === undefined ? undefined : COMMANDS.find((c) => c.name === topic)
      if (topic !== undefined && !target) throw new UsageError(`unknown command "${topic}"`)
      io.stdout(target ? commandHelp(program, target) : generalHelp(program, COMMANDS))
      return 0
    }
    if (split.command === 'version') {
      io.stdout(`${version()}\n`)
      return 0
    }
    command = COMMANDS.find((c) => c.name === split.command)
    if (!command) {
      throw new UsageError(`unknown command "${split.command}"; commands: ${COMMANDS.map((c) => c.name).join(', ')}`)
    }
    const args = merge(leading, parseArgs(split.rest, [...GLOBAL_FLAGS, ...command.flags], `${program} ${command.name}`))
    if (has(args, 'help')) {
      io.stdout(commandHelp(program, command))
      return 0
    }
    if (has(args, 'version')) {
      io.stdout(`${version()}\n`)
      return 0
    }
    const [min, max] = command.arity
    const n = args.positionals.length
    if (n < min || n > max) {
      const usage = `${program} ${command.name}${command.args ? ` ${command.args}` : ''}`
      throw new UsageError(n < min ? `missing argument: usage is \`${usage}\`` : `too many arguments: usage is \`${usage}\``)
    }
    const format = outputFormat(flag(args, 'output'))
    const namespace = flag(args, 'namespace')
    const kubeconfig = flag(args, 'kubeconfig')
    const context = flag(args, 'context')
    const session = new Session(io, format, {
      ...(namespace !== undefined ? { namespace } : {}),
      ...(kubeconfig !== undefined ? { kubeconfig } : {}),
      ...(context !== undefined ? { context } : {}),
    })
    return await command.run(await session.init(), args)
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`error: ${err.message}\nSee \`${program}${command ? ` ${command.name}` : ''} --help\`.\n`)
      return 2
    }
    if (err instanceof CliError) {
      io.stderr(`error: ${err.message}\n`)
      return err.exitCode
    }
    io.stderr(`error: ${(err as Error)?.stack ?? String(err)}\n`)
    return 1
  }
}

/** The io of a real process: its streams, environment and Ctrl-C. */
export function processIo(programName: string): CliIo & { dispose(): void } {
  const controller = new AbortController()
  const onSigint = (): void => {
    if (controller.signal.aborted) process.exit(130)
    controller.abort()
  }
  process.on('SIGINT', onSigint)
  return {
    stdout: (text) => { process.stdout.write(text) },
    stderr: (text) => { process.stderr.write(text) },
    env: process.env,
    programName,
    isTTY: process.stdout.isTTY === true,
    signal: controller.signal,
    dispose: () => { process.off('SIGINT', onSigint) },
  }
}
