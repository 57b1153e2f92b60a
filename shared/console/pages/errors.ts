/**
 * The pages for what went wrong: a refusal (403) naming the person and what was refused, the
 * Kubernetes API not answering (503), something not there (404), nobody identified (401), and
 * anything else (500, without its details: those are logged, not shown). Pure.
 */
import { apiMessage, ForbiddenError, TransientError, UnauthenticatedError } from '../../core/errors.js'
import type { ConsoleConfig, PageResult, Person } from '../context.js'
import { html } from '../html.js'

/**
 * Pure: what the API server refused, in the console's words, read from its message
 * (`... cannot list resource "workflows" in API group "purko.io" in the namespace "team-a"`);
 * undefined when the message says something else.
 */
export function refusedAction(message: string): string | undefined {
  const match = /cannot (\w+) resource "([^"]+)"(?: in API group "([^"]*)")?(?: in the namespace "([^"]+)"| at the cluster scope)?/.exec(message)
  if (!match) return undefined
  const [, verb, resource, group, namespace] = match
  const kind = group ? `${resource}.${group}` : resource
  const where = namespace ? ` in namespace ${namespace}` : /at the cluster scope/.test(message) ? ' across all namespaces' : ''
  return `${verb} ${kind}${where}`
}

/** Pure: the page for an error a page handler threw. */
export function errorPage(err: unknown, person?: Person): PageResult {
  if (err instanceof ForbiddenError) {
    const message = apiMessage(err)
    const what = refusedAction(message)
    const who = person ? person.name : 'You'
    const sentence = what
      ? html`You (${who}) may not ${what}.`
      : html`You (${who}) may not see this.`
    return {
      status: 403,
      title: 'Not allowed',
      nav: 'error',
      body: html`<h1>Not allowed</h1><p>${sentence}</p><p class="error-detail">The Kubernetes API said: ${message}</p><p>Ask a cluster administrator for a Role granting it, or <a href="/workflows">go back to the workflows</a>.</p>`,
    }
  }
  if (err instanceof UnauthenticatedError) {
    // Signed-in tokens expire (kubectl create token gives one hour by default) or are revoked.
    const again = person?.mode === 'token'
      ? html`<form method="post" action="/signout" data-signout><button type="submit" class="button">Sign in again</button></form>`
      : html`<p>Ask whoever runs the console's sign-in to check its credentials.</p>`
    return {
      status: 401,
      title: 'Sign-in no longer accepted',
      nav: 'error',
      body: html`<h1>Sign-in no longer accepted</h1><p>The Kubernetes API server no longer accepts the credentials this console uses for you (a token that expired or was revoked).</p>${again}`,
    }
  }
  if (err instanceof TransientError) {
    return {
      status: 503,
      title: 'Kubernetes is not answering',
      nav: 'error',
      body: html`<h1>Kubernetes is not answering</h1><p>The Kubernetes API is unreachable or overloaded right now. Try again in a moment.</p>`,
    }
  }
  return {
    status: 500,
    title: 'Something went wrong',
    nav: 'error',
    body: html`<h1>Something went wrong</h1><p>The console could not show this page. The error was logged; try again, and tell the team that runs Kinetic if it keeps happening.</p>`,
  }
}

/** Pure: the 404 page for something that is not there (or that this person may not see). */
export function notFoundPage(what: string): PageResult {
  const subject = what.charAt(0).toUpperCase() + what.slice(1)
  return {
    status: 404,
    title: 'Not found',
    nav: 'error',
    body: html`<h1>Not found</h1><p>${subject} was not found, or you may not see it.</p><p><a href="/workflows">Go to the workflows</a></p>`,
  }
}

/** Pure: the 401 page when nobody could be identified (the proxy sent no user, or nobody signed in). */
export function notIdentifiedPage(config: ConsoleConfig): PageResult {
  const body = config.auth === 'proxy'
    ? html`<h1>Not identified</h1><p>The authenticating proxy in front of the console did not say who you are, so the console shows nothing. Sign in through your organisation's proxy and try again.</p>`
    : config.auth === 'token'
      ? html`<h1>Not signed in</h1><p>Sign in with a Kubernetes bearer token to see what you may read.</p><p><a class="button" href="/signin">Sign in</a></p>`
      : html`<h1>Not identified</h1><p>The console could not tell who you are.</p>`
  return { status: 401, title: config.auth === 'token' ? 'Not signed in' : 'Not identified', nav: 'error', body }
}
