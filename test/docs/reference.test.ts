// docs/reference/functions.md is generated from knative/ (npm run generate:reference): it must be
// what the generator makes of the manifests as they are, and name every function there is.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cell, filterText, firstSentence, FUNCTIONS_REFERENCE, functionsReference } from '../../scripts/generate-reference.js'

const ROOT = join(import.meta.dirname, '../..')

describe('the functions reference', () => {
  const committed = readFileSync(join(ROOT, FUNCTIONS_REFERENCE), 'utf8')

  it('is what npm run generate:reference makes of knative/ now (run it after changing a Service, Trigger or source)', () => {
    expect(committed).toBe(functionsReference(ROOT))
  })

  it('has a row for every function folder, with its visibility', () => {
    const functions = readdirSync(join(ROOT, 'functions'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)
    for (const name of functions) expect(committed, name).toMatch(new RegExp(`^\\| \`${name}\` \\|`, 'm'))
    expect(committed).toMatch(/^\| `webhook-trigger` \|.*\| \*\*public\*\* \|/m)
    expect(committed).toMatch(/^\| `step-job-finished` \|.*\| cluster-local \|/m)
  })

  it('lists each Trigger\'s filters and each PingSource\'s schedule as shipped', () => {
    expect(committed).toContain('### Trigger step-job-finished')
    expect(committed).toContain('- filters: `kineticsource=resources`, `kind=Job`, `type=dev.knative.apiserver.resource.update`')
    expect(committed).toMatch(/^\| `resync` \| `3 \* \* \* \*` \| `resync` \| `resync-tick` \|/m)
  })
})

describe('the generator\'s pieces', () => {
  it.each([
    ['Keeps X (Trigger: a.yaml). More.', 'Keeps X (Trigger: a.yaml).'],
    ['Probes each one (every 300 s. or so) and more; then this.', 'Probes each one (every 300 s. or so) and more.'],
    ['No end', 'No end'],
  ])('takes the first sentence of %j', (comment, sentence) => {
    expect(firstSentence(comment)).toBe(sentence)
  })

  it('keeps a table cell one cell, and its text text', () => {
    expect(cell('a | b <name> {{x}}')).toBe('a \\| b &lt;name&gt; {&#8203;{x}}')
  })

  it('writes nested filters as a reader would say them', () => {
    expect(filterText([{ exact: { kineticsource: 'resources' } }, { any: [{ exact: { kind: 'Role' } }, { exact: { kind: 'RoleBinding' } }] }], undefined))
      .toBe('`kineticsource=resources`, one of (`kind=Role`; `kind=RoleBinding`)')
  })
})
