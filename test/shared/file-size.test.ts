// Files a newcomer can read in one sitting: no product file runs past 400 lines unless it says,
// in its first lines, why it stays long.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { importGraph, ROOT } from '../support/import-graph.js'

const LIMIT = 400
const REASON = /Why this file stays long:/

describe('file size', () => {
  const files = [...importGraph().keys()]

  it('reads every product folder', () => {
    expect(files.length).toBeGreaterThan(400)
  })

  it(`keeps every product file within ${LIMIT} lines, or says at its top why not`, () => {
    const long = files.flatMap((file) => {
      const lines = readFileSync(join(ROOT, file), 'utf8').split('\n')
      const said = REASON.test(lines.slice(0, 20).join('\n'))
      return lines.length > LIMIT && !said ? [`${file}: ${lines.length} lines`] : []
    })
    expect(long).toEqual([])
  })
})
