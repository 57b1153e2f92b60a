// Links of the documentation site (`npm run docs:build`, docs/.vitepress/config.ts): which
// Markdown files are pages, where a link in them leads, and what a built site's links miss.
// The site's pages are the repository's Markdown files (README.md is the home page), so a link
// between two of them is checked by VitePress; a link to anything else in the repository (a
// source file, a folder, a YAML manifest) is not a page of the site and is checked here instead.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, posix, relative, resolve, sep } from 'node:path'

/** Folders of the repository that hold no page of the site (build output, state, test data). */
export const NOT_SITE_FOLDERS = ['node_modules', '.git', 'dist', '.kinetic', 'release', 'test', 'test-artifacts', 'docs/.vitepress'] as const

/** The page each rewritten Markdown file becomes: README.md is the site's home page. */
export const SITE_REWRITES: Readonly<Record<string, string>> = { 'README.md': 'index.md' }

/** Where a link written in a Markdown file leads. */
export type LinkTarget =
  | { kind: 'external' }
  | { kind: 'same-page'; hash: string }
  | { kind: 'page'; page: string; hash: string }
  | { kind: 'file'; path: string; hash: string }

/** Every Markdown file of the repository that is a page of the site, repository-relative with `/`. */
export function sitePages(root: string): string[] {
  const pages: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = dir ? `${dir}/${entry.name}` : entry.name
      if (entry.isDirectory()) {
        if (!(NOT_SITE_FOLDERS as readonly string[]).includes(path) && entry.name !== 'node_modules') walk(path)
      } else if (entry.isFile() && entry.name.endsWith('.md')) {
        pages.push(path)
      }
    }
  }
  walk('')
  return pages.sort()
}

/**
 * Pure: where `href`, written in the Markdown file `from` (repository-relative), leads. A
 * relative link is resolved against `from`'s folder; `/`-rooted links are site paths and taken
 * as pages. Whatever resolves to a file that `isPage` does not know is a repository file.
 */
export function classifyLink(from: string, href: string, isPage: (path: string) => boolean): LinkTarget {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) return { kind: 'external' }
  const hashAt = href.indexOf('#')
  const hash = hashAt >= 0 ? href.slice(hashAt + 1) : ''
  const path = decodeURI((hashAt >= 0 ? href.slice(0, hashAt) : href).replace(/\?.*$/, ''))
  if (path === '') return { kind: 'same-page', hash }
  const joined = path.startsWith('/') ? path.slice(1) : posix.join(posix.dirname(from), path)
  const target = posix.normalize(joined).replace(/\/$/, '')
  if (isPage(target)) return { kind: 'page', page: target, hash }
  if (!target.endsWith('.md') && isPage(`${target}/README.md`)) return { kind: 'page', page: `${target}/README.md`, hash }
  return { kind: 'file', path: target === '.' ? '' : target, hash }
}

/** The site path a page is served at, before VitePress adds `.html` (`docs/guide/agents.md` -> `/docs/guide/agents.md`). */
export function pageHref(page: string, hash: string): string {
  const served = SITE_REWRITES[page] ?? page
  return `/${served}${hash ? `#${hash}` : ''}`
}

/** A link found in a Markdown file, with the line it is on. */
export interface MarkdownLink {
  file: string
  line: number
  href: string
}

/**
 * Pure: the inline links and images of a Markdown text, outside code blocks and code spans.
 * Reference-style links are not used in this repository, so they are not looked for.
 */
export function markdownLinks(file: string, text: string): MarkdownLink[] {
  const links: MarkdownLink[] = []
  let fence: string | null = null
  text.split('\n').forEach((raw, i) => {
    const fenceMatch = /^\s*(```+|~~~+)/.exec(raw)
    if (fenceMatch) {
      const mark = fenceMatch[1] ?? ''
      if (fence === null) fence = mark
      else if (mark.startsWith(fence)) fence = null
      return
    }
    if (fence !== null) return
    const line = raw.replace(/(`+)[^`]*?\1/g, '')
    for (const m of line.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ file, line: i + 1, href: m[1] ?? '' })
    }
  })
  return links
}

/** Links of the site's Markdown that lead to a repository file or folder that does not exist. */
export function missingRepositoryFiles(root: string, pages: readonly string[]): string[] {
  const isPage = pageSet(pages)
  const problems: string[] = []
  for (const page of pages) {
    for (const link of markdownLinks(page, readFileSync(join(root, page), 'utf8'))) {
      const target = classifyLink(page, link.href, isPage)
      if (target.kind === 'file' && !existsSync(join(root, target.path))) {
        problems.push(`${link.file}:${link.line}: ${link.href} -> ${target.path} does not exist`)
      }
    }
  }
  return problems
}

/** A membership test over repository-relative page paths. */
export function pageSet(pages: readonly string[]): (path: string) => boolean {
  const set = new Set(pages)
  return (path) => set.has(path)
}

/** Every `.html` file under `dir`, relative to it with `/`. */
function htmlFiles(dir: string): string[] {
  const out: string[] = []
  const walk = (sub: string): void => {
    for (const entry of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const path = sub ? `${sub}/${entry.name}` : entry.name
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.html')) out.push(path)
    }
  }
  walk('')
  return out.sort()
}

/** Pure: the `href` values of the `<a>` elements of an HTML text, entities decoded. */
export function anchorHrefs(html: string): string[] {
  return [...html.matchAll(/<a\s[^>]*?\bhref="([^"]*)"/g)].map((m) => (m[1] ?? '').replaceAll('&amp;', '&').replaceAll('&quot;', '"'))
}

/** Pure: the element ids of an HTML text. */
export function elementIds(html: string): Set<string> {
  return new Set([...html.matchAll(/\sid="([^"]*)"/g)].map((m) => m[1] ?? ''))
}

/**
 * The internal links of a built site that lead nowhere: a page that was not built, or a
 * `#fragment` that no element of the target page has. External links are not followed.
 */
export function brokenSiteLinks(outDir: string, base = '/'): string[] {
  const files = htmlFiles(outDir)
  const known = new Set(files)
  const ids = new Map<string, Set<string>>()
  const idsOf = (file: string): Set<string> => {
    let set = ids.get(file)
    if (!set) ids.set(file, (set = elementIds(readFileSync(join(outDir, file), 'utf8'))))
    return set
  }
  const problems: string[] = []
  for (const file of files) {
    for (const href of new Set(anchorHrefs(readFileSync(join(outDir, file), 'utf8')))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue
      const hashAt = href.indexOf('#')
      const hash = hashAt >= 0 ? decodeURIComponent(href.slice(hashAt + 1)) : ''
      const path = decodeURI((hashAt >= 0 ? href.slice(0, hashAt) : href).replace(/\?.*$/, ''))
      let target = file
      if (path !== '') {
        const fromRoot = path.startsWith(base) ? path.slice(base.length) : path.startsWith('/') ? null : posix.join(posix.dirname(file), path)
        if (fromRoot === null) {
          problems.push(`${file}: ${href} is outside the site's base ${base}`)
          continue
        }
        const normal = posix.normalize(fromRoot === '' ? '.' : fromRoot)
        const candidates = normal === '.' || normal.endsWith('/') || fromRoot.endsWith('/')
          ? [posix.join(normal, 'index.html')]
          : normal.endsWith('.html') ? [normal] : [`${normal}.html`, posix.join(normal, 'index.html')]
        const found = candidates.find((c) => known.has(c))
        if (!found) {
          problems.push(`${file}: ${href} leads to no page`)
          continue
        }
        target = found
      }
      if (hash !== '' && !idsOf(target).has(hash)) problems.push(`${file}: ${href} names no element of ${target}`)
    }
  }
  return problems
}

/** The repository root, from this file's place in it. */
export const REPO_ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..')

/** `path` relative to the repository root, with `/`. */
export function repoRelative(path: string): string {
  return relative(REPO_ROOT, path).split(sep).join('/')
}

/** True when `path` (repository-relative) is a folder. */
export function isFolder(root: string, path: string): boolean {
  try {
    return statSync(join(root, path)).isDirectory()
  } catch {
    return false
  }
}
