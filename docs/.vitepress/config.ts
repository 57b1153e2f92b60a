// The documentation site: `npm run docs:build` (static HTML in docs/.vitepress/dist),
// `npm run docs:dev` (a local server). Its pages are the repository's own Markdown files, with
// README.md as the home page, so every page reads the same on the site and in the repository.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type DefaultTheme } from 'vitepress'
import { classifyLink, NOT_SITE_FOLDERS, pageHref, pageSet, sitePages, SITE_REWRITES } from '../../scripts/docs-links.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const PAGES = sitePages(ROOT)
const isPage = pageSet(PAGES)
// Set to a web view of the repository's files (e.g. `https://<host>/<org>/kinetic/blob/main`) to
// make links to source files clickable on the site; without it they show as the file's path.
const SOURCE_URL = process.env.KINETIC_DOCS_SOURCE_URL?.replace(/\/$/, '')

/** The first `# ` heading of a page, for the sidebar. */
function titleOf(page: string): string {
  const heading = /^# (.+)$/m.exec(readFileSync(join(ROOT, page), 'utf8'))?.[1] ?? page
  return heading.replace(/`/g, '')
}

/**
 * Sidebar entries for every page of a docs/ folder: the pages named in `first` in that order,
 * then the rest in file-name order (index first), so a new page is never left out.
 */
function folder(dir: string, first: readonly string[] = []): DefaultTheme.SidebarItem[] {
  const rank = (f: string) => (first.includes(f) ? first.indexOf(f) : first.length)
  return readdirSync(join(ROOT, dir))
    .filter((f) => f.endsWith('.md'))
    .sort((a, b) => rank(a) - rank(b) || Number(b === 'index.md') - Number(a === 'index.md') || a.localeCompare(b))
    .map((f) => ({ text: titleOf(`${dir}/${f}`), link: `/${dir}/${f.replace(/\.md$/, '')}` }))
}

const componentReadmes = PAGES.filter((p) => p.endsWith('/README.md') && !p.startsWith('docs/'))

export default defineConfig({
  title: 'Kinetic',
  description: 'AI-agent workflows on Kubernetes as scale-to-zero Knative functions',
  srcDir: '..',
  srcExclude: [...NOT_SITE_FOLDERS.map((f) => `${f}/**`)],
  rewrites: { ...SITE_REWRITES },
  // Every page's links are checked: VitePress fails the build on a link to a missing page, and
  // the markdown hook below fails it on a link to a missing repository file.
  ignoreDeadLinks: false,
  lastUpdated: false,
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/docs/guide/getting-started' },
      { text: 'Reference', link: '/docs/reference/functions' },
      { text: 'Architecture', link: '/docs/architecture/event-flow' },
      { text: 'Decisions', link: '/docs/decisions/' },
      { text: 'Performance', link: '/docs/performance/' },
    ],
    sidebar: [
      { text: 'Start', items: [
        { text: 'Kinetic (README)', link: '/' },
        { text: 'Documentation map', link: '/docs/' },
        { text: 'Contributing', link: '/CONTRIBUTING' },
      ] },
      { text: 'Guide', items: folder('docs/guide', ['getting-started.md', 'workflows.md', 'agents.md', 'autonomy.md', 'templates-schedules-webhooks.md', 'cli-and-run-control.md', 'console.md', 'mcp-servers-and-providers.md', 'recipes.md', 'install-knative.md', 'security.md', 'traces-and-metrics.md', 'purko-compatibility.md']) },
      { text: 'Recipes', items: folder('docs/recipes') },
      { text: 'Reference', items: folder('docs/reference', ['functions.md', 'annotations-and-labels.md', 'cloudevents.md']) },
      { text: 'Architecture', items: folder('docs/architecture', ['event-flow.md', 'write-order.md', 'errors.md', 'idle.md', 'local-plane.md', 'embedded-kubectl.md', 'test-tiers.md', 'cluster.md', 'knative-cluster.md', 'mcp-registry.md', 'security-decisions.md']) },
      { text: 'Component READMEs', collapsed: true, items: componentReadmes.map((p) => ({ text: p.replace(/\/README\.md$/, '/'), link: `/${p.replace(/\.md$/, '')}` })) },
      { text: 'Performance', collapsed: true, items: folder('docs/performance') },
      { text: 'Decisions', collapsed: true, items: folder('docs/decisions') },
    ],
    search: { provider: 'local' },
    outline: { level: [2, 3] },
  },
  markdown: {
    config(md) {
      const pageLinkOpen = md.renderer.rules.link_open
      const linkClose = md.renderer.rules.link_close
      md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
        const token = tokens[idx]!
        const href = token.attrGet('href')
        const realPath: string | undefined = env.realPath ?? env.path
        if (href !== null && realPath) {
          const from = relative(ROOT, realPath).split(sep).join('/')
          const target = classifyLink(from, href, isPage)
          if (target.kind === 'page') {
            token.attrSet('href', pageHref(target.page, target.hash))
          } else if (target.kind === 'file') {
            if (!existsSync(join(ROOT, target.path))) {
              throw new Error(`${from}: the link ${href} leads to ${target.path}, which does not exist in the repository`)
            }
            if (SOURCE_URL) {
              token.attrSet('href', `${SOURCE_URL}/${target.path}`)
            } else {
              // Not a page of the site: shown as the repository path it names.
              const close = tokens.slice(idx + 1).find((t) => t.type === 'link_close')
              if (close) close.meta = { ...(close.meta ?? {}), repoFile: true }
              return `<span class="repo-file" title="${md.utils.escapeHtml(target.path || '.')} in the repository">`
            }
          }
        }
        return pageLinkOpen ? pageLinkOpen(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options)
      }
      // Code spans show `{{...}}` (recipe templates) as written: Vue must not read them as interpolation.
      const codeInline = md.renderer.rules.code_inline
      md.renderer.rules.code_inline = (tokens, idx, options, env, self) => {
        tokens[idx]!.attrSet('v-pre', '')
        return codeInline ? codeInline(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options)
      }
      md.renderer.rules.link_close = (tokens, idx, options, env, self) => {
        if (tokens[idx]?.meta?.repoFile) return '</span>'
        return linkClose ? linkClose(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options)
      }
    },
  },
  vite: {
    // The site needs nothing from the network; keep Vite's cache with the site's.
    cacheDir: join(dirname(fileURLToPath(import.meta.url)), 'cache', 'vite'),
  },
})
