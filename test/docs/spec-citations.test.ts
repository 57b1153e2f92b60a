import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { citationProblems, citationsOf, headingNumbers, readDoc, ROOT, scannedFiles, SIGN, SPEC } from './citations.js'

// Code, tests and docs cite sections of docs/recipes/lifecycle-spec.md as `spec <sign>N.M`. A
// reader following one must land on a heading of that number; this keeps the two in step.

const files = scannedFiles().filter((f) => f !== SPEC)
const citations = files.flatMap((f) => citationsOf(f, readFileSync(join(ROOT, f), 'utf8')))

describe('section citations', () => {
  it('are found all over the repository, most of them citing the recipe lifecycle specification', () => {
    expect(files).toContain('shared/recipe/plan/lifecycle/transition-table.ts')
    expect(citations.filter((c) => c.doc === SPEC).length).toBeGreaterThan(500)
    expect(new Set(citations.map((c) => c.file.split('/')[0])).size).toBeGreaterThan(8)
  })

  it('each name a document and a section that document has a heading for', () => {
    expect(citationProblems(citations, (doc) => readDoc(doc))).toEqual([])
  })

  it('cover the spec\'s own numbering: every cited section of the spec is one of its headings', () => {
    const headings = headingNumbers(readFileSync(join(ROOT, SPEC), 'utf8'))
    const cited = new Set(citations.filter((c) => c.doc === SPEC).flatMap((c) => c.sections))
    expect([...cited].filter((s) => !headings.has(s))).toEqual([])
    // The sections the code leans on most are headings of their own.
    for (const s of ['1.1', '5.2', '6', '7.3', '7.9', '7.11', '8.2', '10.2', '11.3', '14.3']) expect(headings).toContain(s)
  })
})

describe('the citation check', () => {
  const spec = ['# Spec', '## 5 Objects', '### 5.2 Names', '## 7 Lifecycle', '### 7.3 Transition table', '```', '## 9 in a code block', '```'].join('\n')
  const read = (doc: string) => (doc === SPEC ? spec : doc === 'docs/other.md' ? '## K1 Facts\n' : undefined)
  const check = (text: string) => citationProblems(citationsOf('shared/x.ts', text), read)

  it('accepts a heading that exists, ranges and further signs on the same line', () => {
    expect(check(`// spec ${SIGN}5.2 and ${SIGN}7.3; spec ${SIGN}5-${SIGN}7, (spec ${SIGN}5.2-7.3)`)).toEqual([])
  })

  it('names file and line of a section without a heading, also of a range end', () => {
    expect(check(`/**\n * T1 of spec ${SIGN}7.4\n */\n// spec ${SIGN}5.2-5.3`)).toEqual([
      `shared/x.ts:2: ${SIGN}7.4 has no heading in ${SPEC}`,
      `shared/x.ts:4: ${SIGN}5.3 has no heading in ${SPEC}`,
    ])
  })

  it('does not count a heading inside a code block', () => {
    expect(check(`// spec ${SIGN}9`)).toEqual([`shared/x.ts:1: ${SIGN}9 has no heading in ${SPEC}`])
  })

  it('refuses a sign that names no document, and one that names a missing document', () => {
    const problems = check(`// CONTRACT ${SIGN}5.2\n// as docs/gone.md ${SIGN}1 says\n// docs/other.md ${SIGN}K1`)
    expect(problems[0]).toMatch(/^shared\/x\.ts:1: ".*" names no document/)
    expect(problems[1]).toMatch(/^shared\/x\.ts:2: ".*" cites docs\/gone\.md, which does not exist/)
    expect(problems[2]).toMatch(/^shared\/x\.ts:3: ".*" has no section number/)
  })

  it('fails on the real spec once a cited heading is gone', () => {
    const real = readFileSync(join(ROOT, SPEC), 'utf8')
    const without = real.replace(/^### 7\.9 .*$/m, '### Revisions and rollback')
    const problems = citationProblems(citations, (doc) => (doc === SPEC ? without : readDoc(doc)))
    const gone = problems.filter((p) => p.endsWith(`${SIGN}7.9 has no heading in ${SPEC}`))
    expect(gone.length).toBeGreaterThan(10)
    expect(gone).toContain(`shared/recipe/plan/rollback.ts:2: ${SIGN}7.9 has no heading in ${SPEC}`)
  })
})

describe('the spec as a page of the docs site', () => {
  // The docs site compiles each page as a Vue template: a double brace outside code is an
  // interpolation and a `<word>` outside code an element, and either breaks the build.
  it('has no double brace and no tag-like text outside code', () => {
    const offending: string[] = []
    let fenced = false
    readFileSync(join(ROOT, SPEC), 'utf8').split('\n').forEach((line, i) => {
      if (line.startsWith('```')) { fenced = !fenced; return }
      if (fenced) return
      const outside = line.replace(/<code v-pre>.*?<\/code>/g, '').replace(/`[^`]*`/g, '')
      if (outside.includes('{{') || /<[A-Za-z/]/.test(outside)) offending.push(`${SPEC}:${i + 1}: ${line}`)
    })
    expect(offending).toEqual([])
  })
})
