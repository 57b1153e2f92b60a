import { describe, expect, it } from 'vitest'
import { GLOBAL_FLAGS, parseArgs, parseParams, splitCommand, type FlagSpec } from '../../cli/args.js'
import { UsageError } from '../../cli/errors.js'
import { humanDuration } from '../../cli/output.js'

const SPECS: FlagSpec[] = [...GLOBAL_FLAGS, { name: 'param', short: 'p', value: 'k=v', repeatable: true, description: '' }, { name: 'follow', short: 'f', description: '' }]

describe('parseArgs', () => {
  it.each([
    [['wf', '-n', 'team', '-o=json'], ['wf'], { namespace: ['team'], output: ['json'] }],
    [['--namespace=team', 'wf', 'step', '-f'], ['wf', 'step'], { namespace: ['team'], follow: ['true'] }],
    [['wf', '-p', 'a=1', '--param', 'b=2', '--param=c=3'], ['wf'], { param: ['a=1', 'b=2', 'c=3'] }],
    [['wf', '--', '-not-a-flag'], ['wf', '-not-a-flag'], {}],
  ])('reads %j', (argv, positionals, flags) => {
    const parsed = parseArgs(argv, SPECS, 'kinetic x')
    expect(parsed.positionals).toEqual(positionals)
    expect(Object.fromEntries(parsed.flags)).toEqual(flags)
  })

  it.each([
    [['--nope'], 'unknown flag --nope for "kinetic x"'],
    [['-n'], 'flag -n needs a value (ns)'],
    [['-f=yes'], 'flag -f takes no value'],
    [['-n', 'a', '-n', 'b'], 'flag --namespace given twice'],
  ])('refuses %j as a usage error', (argv, message) => {
    expect(() => parseArgs(argv, SPECS, 'kinetic x')).toThrow(new UsageError(message))
  })
})

describe('splitCommand and parseParams', () => {
  it('takes global flags (and their values) before the command', () => {
    expect(splitCommand(['-n', 'team', '--context=prod', 'status', 'wf', '-w'])).toEqual({ leading: ['-n', 'team', '--context=prod'], command: 'status', rest: ['wf', '-w'] })
    expect(splitCommand(['--help'])).toEqual({ leading: ['--help'], command: undefined, rest: [] })
  })

  it('splits key=value at the first =, keeps empty values, and refuses a missing key', () => {
    expect(parseParams(['url=http://x/?a=b', 'empty='])).toEqual({ url: 'http://x/?a=b', empty: '' })
    expect(() => parseParams(['=v'])).toThrow(UsageError)
  })
})

describe('humanDuration', () => {
  it.each([[0, '0s'], [59, '59s'], [60, '1m'], [200, '3m20s'], [3600, '1h'], [7500, '2h5m'], [86400 * 3 + 3600 * 4, '3d4h']])('%d s is %s', (s, text) => {
    expect(humanDuration(s)).toBe(text)
  })
})
