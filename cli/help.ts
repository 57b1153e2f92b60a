import { GLOBAL_FLAGS, type FlagSpec } from './args.js'
import type { Command } from './command.js'

function flagLines(flags: readonly FlagSpec[]): string[] {
  const left = flags.map((f) => `${f.short ? `-${f.short}, ` : '    '}--${f.name}${f.value ? ` <${f.value}>` : ''}`)
  const width = Math.max(...left.map((l) => l.length))
  return flags.map((f, i) => `  ${left[i]!.padEnd(width)}   ${f.description}`)
}

function wrap(text: string, width = 96): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else {
      line = line ? `${line} ${word}` : word
    }
  }
  if (line) lines.push(line)
  return lines.map((l) => `  ${l}`).join('\n')
}

/** Pure: the help of one command. */
export function commandHelp(program: string, command: Command): string {
  const lines = [
    `${command.summary}.`,
    '',
    'Usage:',
    `  ${program} ${command.name}${command.args ? ` ${command.args}` : ''} [flags]`,
    '',
    wrap(command.description),
  ]
  if (command.flags.length > 0) lines.push('', 'Flags:', ...flagLines(command.flags))
  lines.push('', 'Global flags:', ...flagLines(GLOBAL_FLAGS))
  if (command.examples.length > 0) lines.push('', 'Examples:', ...command.examples.map((e) => `  ${e.replace(/^kinetic\b/, program)}`))
  return `${lines.join('\n')}\n`
}

/** Pure: the overview of every command. */
export function generalHelp(program: string, commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length))
  return [
    'kinetic: start, steer and watch Kinetic Workflows (purko.io/v1alpha1) on Kubernetes.',
    'Uses your kubeconfig like kubectl ($KUBECONFIG or ~/.kube/config, its current context and namespace).',
    '',
    'Usage:',
    `  ${program} <command> [arguments] [flags]`,
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}   ${c.summary}`),
    `  ${'help'.padEnd(width)}   Show help for a command`,
    '',
    'Global flags:',
    ...flagLines(GLOBAL_FLAGS),
    '',
    'Exit codes: 0 ok, 1 failure (the reason is on stderr), 2 usage error.',
    `Run \`${program} <command> --help\` for a command's arguments and flags.`,
    '',
  ].join('\n')
}
