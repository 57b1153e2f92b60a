// Section citations in the repository's files, and the headings they must point at.
//
// The convention (docs/recipes/lifecycle-spec.md, "How the code cites this page"): a section
// sign is preceded by the document it cites, `spec` for the recipe lifecycle specification or a
// Markdown path such as `docs/knative-cluster.md`. Further signs later on the same line cite the
// same document (`spec <sign>7.1-<sign>7.7, <sign>7.10`). A sign with no document before it on its
// line is an error, and so is a section number that has no heading in the cited document.
// The sign is written as a \u escape in this file and its test, so they cite nothing themselves.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, extname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

export const SIGN = '\u00a7'
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
/** The document `spec` stands for. */
export const SPEC = 'docs/recipes/lifecycle-spec.md'

/** Folders that hold no source of the project (dependencies, build output, local state). */
const SKIPPED_DIRS = new Set(['node_modules'])
/** Top-level folders of build output and local state (.gitignore). */
const SKIPPED_TOP_DIRS = new Set(['dist', 'coverage', 'test-artifacts', 'release'])
/** Text files that can carry a citation: code, configuration and docs. */
const SCANNED_EXTS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.md', '.yaml', '.yml', '.json', '.sh', '.html', '.css'])

export interface Citation {
  file: string
  line: number
  /** The cited document (repository path), or undefined when the line names none. */
  doc?: string
  /** Section numbers the citation needs, e.g. `7.3`, or both ends of a range `10.2-10.4`. */
  sections: string[]
  text: string
}

/** Repository paths (with `/`) of every scanned file, sorted; dot folders are skipped. */
export function scannedFiles(root = ROOT): string[] {
  const out: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name) && !(dir === root && SKIPPED_TOP_DIRS.has(entry.name))) walk(path)
      } else if (entry.isFile() && SCANNED_EXTS.has(extname(entry.name))) {
        out.push(relative(root, path).split(sep).join('/'))
      }
    }
  }
  walk(root)
  return out.sort()
}

const SECTION = /^(\d+(?:\.\d+)*)(?:-(?:\u00a7)?(\d+(?:\.\d+)*))?/
const KEY_BEFORE = /(?:^|[\s(`'"[])(spec|[\w./-]+\.md) $/

/** Every section sign of `text` as a citation: the document it names and the sections it needs. */
export function citationsOf(file: string, text: string): Citation[] {
  const out: Citation[] = []
  text.split('\n').forEach((lineText, i) => {
    let doc: string | undefined
    let from = 0
    for (;;) {
      const at = lineText.indexOf(SIGN, from)
      if (at < 0) break
      from = at + 1
      const key = KEY_BEFORE.exec(lineText.slice(0, at))?.[1]
      if (key) doc = key === 'spec' ? SPEC : key
      const number = SECTION.exec(lineText.slice(at + 1))
      const sections = number ? [number[1]!, ...(number[2] ? [number[2]] : [])] : []
      out.push({ file, line: i + 1, ...(doc ? { doc } : {}), sections, text: lineText.slice(Math.max(0, at - 30), at + 12).trim() })
    }
  })
  return out
}

/** Section numbers of a Markdown document's headings: `## 5.2 Names` gives `5.2`, `## 11 Deletion` gives `11`. */
export function headingNumbers(markdown: string): Set<string> {
  const out = new Set<string>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const m = !fenced && /^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s/.exec(line)
    if (m) out.add(m[1]!)
  }
  return out
}

/**
 * Pure apart from `read`: one message per citation that names no document, a document that does
 * not exist, no section number, or a section the document has no heading for, as
 * `<file>:<line>: <what>`.
 */
export function citationProblems(citations: Citation[], read: (doc: string) => string | undefined): string[] {
  const headings = new Map<string, Set<string> | undefined>()
  const headingsOf = (doc: string) => {
    if (!headings.has(doc)) {
      const text = read(doc)
      headings.set(doc, text === undefined ? undefined : headingNumbers(text))
    }
    return headings.get(doc)
  }
  const problems: string[] = []
  for (const c of citations) {
    const where = `${c.file}:${c.line}`
    if (!c.doc) { problems.push(`${where}: "${c.text}" names no document (write "spec ${SIGN}N" or "<path>.md ${SIGN}N")`); continue }
    const found = headingsOf(c.doc)
    if (!found) { problems.push(`${where}: "${c.text}" cites ${c.doc}, which does not exist`); continue }
    if (c.sections.length === 0) { problems.push(`${where}: "${c.text}" has no section number`); continue }
    for (const s of c.sections) {
      if (!found.has(s)) problems.push(`${where}: ${SIGN}${s} has no heading in ${c.doc}`)
    }
  }
  return problems
}

/** Reads a cited document from the repository (undefined when absent). */
export function readDoc(doc: string, root = ROOT): string | undefined {
  const path = join(root, doc)
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined
}
