/**
 * The document around every page: language, skip link, navigation, who is using the console and
 * how they were identified, the one live region, stylesheets and deferred scripts. No inline
 * script or style anywhere, so the strict Content-Security-Policy (`default-src 'self'`) holds;
 * whatever the client script needs travels in data-* attributes. Pure.
 */
import type { ConsoleConfig, ConsoleRequest, NavKey, PageResult, Person } from './context.js'
import { html, join, type Html } from './html.js'

/** What the shell needs of a request; error pages before identification pass this much. */
export interface ShellRequest {
  config: ConsoleConfig
  person?: Person
  now: Date
  assetUrl: (name: string) => string
}

const NAV: readonly { key: NavKey; href: string; label: string }[] = [
  { key: 'workflows', href: '/workflows', label: 'Workflows' },
  { key: 'agents', href: '/agents', label: 'Agents' },
  { key: 'mcpservers', href: '/mcpservers', label: 'MCP servers' },
  { key: 'providers', href: '/providers', label: 'Providers' },
  { key: 'recipes', href: '/recipes', label: 'Recipes' },
]

/** The banner shown on every page read with the console's own ServiceAccount. */
export const ANONYMOUS_BANNER = "Not signed in: showing what the console's service account can read; read only."

/** Pure: how a person was identified, in a few words. */
export function identifiedHow(person: Person): string {
  switch (person.mode) {
    case 'proxy': return 'via proxy'
    case 'token': return 'signed in with a token'
    case 'local': return 'local admin'
    case 'anonymous': return 'not signed in'
  }
}

function personBlock(req: ShellRequest): Html {
  const person = req.person
  if (!person) {
    return req.config.auth === 'token' ? html`<div class="person"><a href="/signin">Sign in</a></div>` : html``
  }
  if (person.mode === 'anonymous') {
    return html`<div class="person">${req.config.auth === 'token' ? html`<a href="/signin">Sign in</a>` : html`<span>Not signed in</span>`}</div>`
  }
  const signOut = person.mode === 'token'
    ? html`<form class="signout" method="post" action="/signout" data-signout><button type="submit" class="button link">Sign out</button></form>`
    : html``
  return html`<div class="person"><span class="person-name">${person.name}</span> <span class="person-how">(${identifiedHow(person)})</span>${signOut}</div>`
}

function navigation(current: NavKey): Html {
  return html`<nav aria-label="Sections"><ul>${join(NAV.map((item) =>
    html`<li><a href="${item.href}"${item.key === current ? html` aria-current="page"` : ''}>${item.label}</a></li>`))}</ul></nav>`
}

/** The stylesheet for a page script (`run.js` → `run.css`), when the assets have one. */
function stylesFor(req: ShellRequest, scripts: readonly string[]): string[] {
  const urls = [req.assetUrl('console.css')]
  for (const script of scripts) {
    const url = req.assetUrl(script.replace(/\.js$/, '.css'))
    if (url !== '' && !urls.includes(url)) urls.push(url)
  }
  return urls.filter((u) => u !== '')
}

/**
 * Pure: the full HTML5 document for a page. The common script comes first; a page's own scripts
 * (`result.scripts`) follow, all `defer`. A page script `x.js` brings `x.css` with it when the
 * assets hold one (`assetUrl` answers '' for a name it does not know).
 */
export function renderDocument(req: ConsoleRequest | ShellRequest, result: PageResult): string {
  const scripts = ['common.js', ...(result.scripts ?? []).filter((s) => s !== 'common.js')]
  const anonymous = req.person?.mode === 'anonymous'
    ? html`<p class="banner banner-anonymous" role="note">${ANONYMOUS_BANNER}</p>`
    : html``
  const readOnly = req.person && req.person.mode !== 'anonymous' && !req.config.actions
    ? html`<span class="read-only" title="This console is read only: no actions are offered">read only</span>`
    : html``
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${result.title} · Kinetic</title>
${join(stylesFor(req, scripts).map((href) => html`<link rel="stylesheet" href="${href}">`), '\n')}
${join(scripts.map((s) => req.assetUrl(s)).filter((u) => u !== '').map((src) => html`<script defer src="${src}"></script>`), '\n')}
</head>
<body data-page="${result.nav}">
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header">
<a class="brand" href="/workflows">Kinetic</a>
${navigation(result.nav)}
${readOnly}
${personBlock(req)}
</header>
${anonymous}
<main id="main" tabindex="-1">
${result.body}
</main>
<div id="announcer" class="visually-hidden" aria-live="polite" aria-atomic="true"></div>
</body>
</html>
`
  return doc.html
}
