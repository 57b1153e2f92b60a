// The documentation site: `npm run docs:build` turns README.md, CONTRIBUTING.md, docs/ and the
// component READMEs into static HTML, and no link of it may lead nowhere: not to a page, not to
// an anchor of a page, not to a repository file. Runs offline.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { brokenSiteLinks, classifyLink, markdownLinks, missingRepositoryFiles, pageSet, sitePages } from '../../scripts/docs-links.js'

const ROOT = join(import.meta.dirname, '../..')

/** Runs a command to its end and gives its exit code and combined output. */
function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, KINETIC_DOCS_SOURCE_URL: '' } })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}

describe('the documentation site', () => {
  const outDir = mkdtempSync(join(tmpdir(), 'kinetic-docs-site-'))
  let build: { code: number | null; output: string }

  beforeAll(async () => {
    build = await run(process.execPath, [join(ROOT, 'node_modules/vitepress/bin/vitepress.js'), 'build', 'docs', '--outDir', outDir], ROOT)
  }, 120_000)
  afterAll(() => rmSync(outDir, { recursive: true, force: true }))

  it('builds, with README.md as the home page and every Markdown page of the repository as a page', () => {
    expect(build.code, build.output).toBe(0)
    expect(build.output).not.toMatch(/dead link/i)
    expect(readFileSync(join(outDir, 'index.html'), 'utf8')).toContain('Install on a Knative cluster')
    for (const page of ['CONTRIBUTING.html', 'docs/index.html', 'docs/guide/workflows.html', 'docs/recipes/lifecycle-spec.html', 'docs/decisions/0001-write-order.html', 'knative/README.html']) {
      expect(() => readFileSync(join(outDir, page)), page).not.toThrow()
    }
  })

  it('has no internal link to a page that was not built or to an anchor the page does not have', () => {
    expect(build.code, build.output).toBe(0)
    expect(brokenSiteLinks(outDir)).toEqual([])
  })

  it('shows recipe templates in code as written, not as Vue interpolation', () => {
    expect(readFileSync(join(outDir, 'docs/guide/recipes.html'), 'utf8')).toContain('{{...}}')
  })

  it('links to no repository file or folder that does not exist', () => {
    expect(missingRepositoryFiles(ROOT, sitePages(ROOT))).toEqual([])
  })
})

describe('the link checks', () => {
  const isPage = pageSet(['README.md', 'docs/index.md', 'docs/guide/agents.md', 'knative/README.md'])

  it.each([
    ['docs/guide/agents.md', '../../README.md#security', { kind: 'page', page: 'README.md', hash: 'security' }],
    ['docs/guide/agents.md', '../index.md', { kind: 'page', page: 'docs/index.md', hash: '' }],
    ['docs/guide/agents.md', '../../knative/', { kind: 'page', page: 'knative/README.md', hash: '' }],
    ['docs/guide/agents.md', '../../shared/core/errors.ts', { kind: 'file', path: 'shared/core/errors.ts', hash: '' }],
    ['README.md', 'examples/local/', { kind: 'file', path: 'examples/local', hash: '' }],
    ['README.md', '#concepts', { kind: 'same-page', hash: 'concepts' }],
    ['README.md', 'https://knative.dev/docs/', { kind: 'external' }],
  ])('in %s, %s leads to the right place', (from, href, expected) => {
    expect(classifyLink(from, href, isPage)).toEqual(expected)
  })

  it('finds links outside code only', () => {
    const text = 'see [a](a.md) and `[b](b.md)`\n```md\n[c](c.md)\n```\n[d](d.md#x)'
    expect(markdownLinks('x.md', text).map((l) => [l.line, l.href])).toEqual([[1, 'a.md'], [5, 'd.md#x']])
  })

  it('reports a link to a missing page, and to a missing anchor of a page that exists', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kinetic-links-'))
    try {
      mkdirSync(join(dir, 'docs'))
      writeFileSync(join(dir, 'index.html'), '<h2 id="here">Here</h2><a href="/docs/a.html#there">a</a><a href="#here">self</a><a href="/docs/gone.html">gone</a><a href="https://example.com/x">x</a>')
      writeFileSync(join(dir, 'docs', 'a.html'), '<h2 id="elsewhere">A</h2><a href="../index.html#here">back</a><a href="./a.html#nowhere">bad</a>')
      expect(brokenSiteLinks(dir)).toEqual([
        'docs/a.html: ./a.html#nowhere names no element of docs/a.html',
        'index.html: /docs/a.html#there names no element of docs/a.html',
        'index.html: /docs/gone.html leads to no page',
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('reports a Markdown link to a repository file that does not exist', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kinetic-links-'))
    try {
      mkdirSync(join(dir, 'docs'))
      writeFileSync(join(dir, 'real.ts'), '')
      writeFileSync(join(dir, 'docs', 'index.md'), '[ok](../real.ts) [gone](../gone.ts)\n')
      expect(missingRepositoryFiles(dir, ['docs/index.md'])).toEqual(['docs/index.md:1: ../gone.ts -> gone.ts does not exist'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('the install commands', () => {
  /** The first `sh` block after a heading. */
  const blockAfter = (file: string, heading: string): string => {
    const text = readFileSync(join(ROOT, file), 'utf8')
    const at = text.indexOf(heading)
    expect(at, `${file} has the heading ${heading}`).toBeGreaterThanOrEqual(0)
    return /```sh\n([\s\S]*?)```/.exec(text.slice(at))?.[1] ?? ''
  }

  it('are the same in the README, which the Knative tier runs, and in the install guide', () => {
    const readme = blockAfter('README.md', '## Install on a Knative cluster')
    expect(readme).toContain('kubectl apply --server-side -f install.yaml')
    expect(blockAfter('docs/guide/install-knative.md', '# Install on a Knative cluster')).toBe(readme)
  })
})
