import { describe, expect, it } from 'vitest'
import { actionForm } from '../../shared/console/action-form.js'
import type { Person, PageResult } from '../../shared/console/context.js'
import { html } from '../../shared/console/html.js'
import { ANONYMOUS_BANNER, renderDocument } from '../../shared/console/shell.js'
import { durationText, timeTag } from '../../shared/console/time.js'
import { ALICE, configOf, NOW, textOf } from './pages/support.js'

const ASSETS: Record<string, string> = { 'console.css': '/assets/aaaa/console.css', 'common.js': '/assets/bbbb/common.js', 'run.js': '/assets/cccc/run.js', 'run.css': '/assets/dddd/run.css' }
const shell = (person: Person | undefined, config = configOf()) => ({ config, now: NOW, assetUrl: (name: string) => ASSETS[name] ?? '', ...(person ? { person } : {}) })
const page: PageResult = { status: 200, title: 'Agents', nav: 'agents', body: html`<h1>Agents</h1>` }

describe('the document shell', () => {
  it('is an English HTML5 document with a viewport, a skip link to main, one live region and the current section marked', () => {
    const doc = renderDocument(shell(ALICE), page)
    expect(doc.startsWith('<!doctype html>\n<html lang="en">')).toBe(true)
    expect(doc).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">')
    expect(doc).toContain('<title>Agents · Kinetic</title>')
    expect(doc).toMatch(/<body[^>]*>\s*<a class="skip-link" href="#main">Skip to content<\/a>/)
    expect(doc).toContain('<main id="main" tabindex="-1">\n<h1>Agents</h1>\n</main>')
    expect(doc.match(/aria-live=/g)).toHaveLength(1)
    expect(doc).toContain('<div id="announcer" class="visually-hidden" aria-live="polite" aria-atomic="true"></div>')
    expect(doc).toContain('<nav aria-label="Sections">')
    expect(doc).toContain('<a href="/agents" aria-current="page">Agents</a>')
    expect(doc.match(/aria-current/g)).toHaveLength(1)
    for (const [href, label] of [['/workflows', 'Workflows'], ['/mcpservers', 'MCP servers'], ['/providers', 'Providers'], ['/recipes', 'Recipes']]) {
      expect(doc).toContain(`<a href="${href}">${label}</a>`)
    }
  })

  it('loads the stylesheet and every script deferred from the assets, with no inline script or style', () => {
    const doc = renderDocument(shell(ALICE), { ...page, scripts: ['run.js'] })
    expect(doc).toContain('<link rel="stylesheet" href="/assets/aaaa/console.css">')
    expect(doc).toContain('<link rel="stylesheet" href="/assets/dddd/run.css">')
    expect(doc).toContain('<script defer src="/assets/bbbb/common.js"></script>\n<script defer src="/assets/cccc/run.js"></script>')
    expect(doc).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    expect(doc).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i)
  })

  it('names the person and how they were identified; a token session can sign out', () => {
    const token = renderDocument(shell(ALICE), page)
    expect(textOf(token)).toContain('alice (signed in with a token) Sign out')
    expect(token).toContain('<form class="signout" method="post" action="/signout" data-signout>')
    const proxy = renderDocument(shell({ mode: 'proxy', name: 'bob@example.com', groups: [], credential: { kind: 'impersonate', user: 'bob@example.com', groups: [] } }, configOf({ auth: 'proxy' })), page)
    expect(textOf(proxy)).toContain('bob@example.com (via proxy)')
    expect(proxy).not.toContain('/signout')
    const local = renderDocument(shell({ mode: 'local', name: 'kinetic-local-admin', groups: ['system:masters'], credential: { kind: 'own' } }, configOf({ auth: 'local', actions: true })), page)
    expect(textOf(local)).toContain('kinetic-local-admin (local admin)')
    expect(textOf(local)).not.toContain('read only')
    expect(textOf(token)).toContain('read only')
  })

  it('tells someone not signed in, on every page, that they see what the console itself can read', () => {
    const anonymous: Person = { mode: 'anonymous', name: 'system:serviceaccount:kinetic-system:console', groups: [], credential: { kind: 'own' } }
    const doc = renderDocument(shell(anonymous, configOf({ anonymousRead: true })), page)
    expect(doc).toContain(`<p class="banner banner-anonymous" role="note">${ANONYMOUS_BANNER.replace("'", '&#39;')}</p>`)
    expect(doc).toContain('<a href="/signin">Sign in</a>')
    expect(doc).not.toContain('/signout')
    expect(renderDocument(shell(ALICE), page)).not.toContain('banner-anonymous')
  })

  it('escapes a hostile person name and page title', () => {
    const doc = renderDocument(shell({ ...ALICE, name: '<script>alert(1)</script>' }), { ...page, title: '</title><script>x</script>' })
    expect(doc).not.toContain('<script>')
    expect(doc).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
  })

  it('renders before anyone is identified (error pages) with a sign-in link in token mode', () => {
    const doc = renderDocument(shell(undefined), { ...page, nav: 'error' })
    expect(doc).toContain('<a href="/signin">Sign in</a>')
    expect(doc).not.toContain('aria-current')
  })
})

describe('times', () => {
  it('reads relative with the exact instant in datetime and title', () => {
    expect(timeTag('2026-12-01T11:57:00Z', NOW).html).toBe('<time class="rel" datetime="2026-12-01T11:57:00.000Z" title="2026-12-01 11:57:00 UTC">3 min ago</time>')
    expect(timeTag('2026-12-01T14:00:00Z', NOW).html).toContain('>in 2 h</time>')
    expect(timeTag('2026-12-01T11:59:58Z', NOW).html).toContain('>just now</time>')
    expect(timeTag('2026-11-28T12:00:00Z', NOW).html).toContain('>3 d ago</time>')
    expect(timeTag(undefined, NOW).html).toBe('')
    expect(timeTag('not a time', NOW).html).toBe('')
  })

  it('gives durations in their two largest units', () => {
    expect(durationText(45_000)).toBe('45 s')
    expect(durationText(200_000)).toBe('3 min 20 s')
    expect(durationText(3_720_000)).toBe('1 h 2 min')
    expect(durationText(3_600_000)).toBe('1 h')
    expect(durationText(97_200_000)).toBe('1 d 3 h')
    expect(durationText(-1)).toBe('')
  })
})

describe('action forms', () => {
  it('carry the path, fixed fields, a labelled reason and editable parameters for the client script', () => {
    const form = actionForm({ path: '/actions/rerun/team-a/wf', label: 'Rerun', reason: true, parameters: { env: 'prod' }, extra: { level: 'ha' }, danger: true, confirm: 'Rerun "wf"?' }).html
    expect(form).toMatch(/^<form class="action-form" method="post" action="\/actions\/rerun\/team-a\/wf" data-action-form data-extra="\{&quot;level&quot;:&quot;ha&quot;\}" data-confirm="Rerun &quot;wf&quot;\?">/)
    const reasonId = /<label for="([^"]+)">Reason/.exec(form)?.[1]
    expect(form).toContain(`<input id="${reasonId}" name="reason"`)
    const paramId = /<label for="([^"]+)">env<\/label>/.exec(form)?.[1]
    expect(form).toContain(`<input id="${paramId}" data-parameter="env" type="text" value="prod"`)
    expect(form).toContain('<button type="submit" class="button danger" disabled data-needs-script>Rerun</button>')
    // Two forms on one page never share label ids.
    const other = actionForm({ path: '/actions/cancel/team-a/wf', label: 'Cancel', reason: true }).html
    expect(/<label for="([^"]+)">Reason/.exec(other)?.[1]).not.toBe(reasonId)
  })
})
