/**
 * The one place the sign-in pages become a document. Until the console shell lands it is a
 * minimal document of our own; then this becomes a call of the shell's renderDocument.
 */
import type { ConsoleConfig, PageResult, Person } from '../context.js'
import { html } from '../html.js'

/** What a page outside a signed-in request is rendered with. */
export interface AuthPageContext {
  config: ConsoleConfig
  person?: Person
  now: Date
  assetUrl: (name: string) => string
}

/** The full HTML document of a sign-in page. */
export function renderAuthPage(ctx: AuthPageContext, result: PageResult): string {
  const css = ctx.assetUrl('console.css')
  return '<!doctype html>' + html`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${result.title} · Kinetic</title>${css ? html`<link rel="stylesheet" href="${css}">` : ''}</head><body><a class="skip-link" href="#main">Skip to content</a><main id="main">${result.body}</main></body></html>`.html
}
