import { describe, expect, it } from 'vitest'
import { humanDuration } from '../../../local/apiserver/human-duration.js'
import { compileJsonPath } from '../../../local/apiserver/jsonpath.js'

describe('humanDuration (the AGE column)', () => {
  it.each([
    [0, '0s'],
    [45_000, '45s'],
    [119_000, '119s'],
    [192_000, '3m12s'],
    [600_000, '10m'],
    [5 * 3600_000, '5h'],
    [5 * 3600_000 + 20 * 60_000, '5h20m'],
    [30 * 3600_000, '30h'],
    [51 * 3600_000, '2d3h'],
    [40 * 86400_000, '40d'],
    [(3 * 365 + 4) * 86400_000, '3y4d'],
  ])('formats %i ms as %s', (ms, text) => {
    expect(humanDuration(ms)).toBe(text)
  })
})

describe('printer-column JSONPath', () => {
  const obj = {
    metadata: { labels: { 'app.kubernetes.io/name': 'kinetic' } },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False' }, { type: 'Synced', status: 'True' }],
      steps: [{ name: 'a' }, { name: 'b' }],
    },
  }

  it.each([
    ['.status.phase', ['Running']],
    ['{.status.phase}', ['Running']],
    ['.status.conditions[?(@.type=="Synced")].status', ['True']],
    ['.status.conditions[?(@.type!="Synced")].type', ['Ready']],
    ['.status.steps[*].name', ['a', 'b']],
    ['.status.steps[-1].name', ['b']],
    ['.metadata.labels.app\\.kubernetes\\.io/name', ['kinetic']],
    [".metadata.labels['app.kubernetes.io/name']", ['kinetic']],
    ['.status.missing', []],
  ])('%s selects %j', (path, expected) => {
    expect(compileJsonPath(path).find(obj)).toEqual(expected)
  })

  it('refuses recursive descent, which printer columns do not need', () => {
    expect(() => compileJsonPath('..name')).toThrow(/recursive descent/)
  })
})
