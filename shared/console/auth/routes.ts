/**
 * Token sign-in (auth=token): GET /signin shows the form, POST /signin checks the pasted bearer
 * token with the API server (SelfSubjectReview as that token) and keeps it in the sealed session
 * cookie, POST /signout forgets it. The token is never logged and never shown back.
 */
import { Hono, type Context } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { deleteCookie, setCookie } from 'hono/cookie'
import { TransientError } from '../../core/errors.js'
import type { TokenIdentity } from '../../kube/port.js'
import type { ConsoleDeps, PageResult } from '../context.js'
import { html, type Html } from '../html.js'
import { renderDocument } from '../shell.js'
import { hasOwnOrigin } from './csrf.js'
import { isFromTrustedProxy } from './person.js'
import { newSession, sealSession, SESSION_COOKIE, SESSION_TTL_SECONDS, type Session } from './session.js'

/** Largest sign-in form accepted: a token is a few kilobytes at most. */
export const MAX_SIGNIN_BYTES = 16 * 1024
// Browsers keep cookies up to 4096 bytes, name and attributes included.
const MAX_COOKIE_VALUE = 3900

/** Options of the sign-in routes. */
export interface SignInOptions {
  /** The bundled assets (the shell's stylesheet), e.g. the console's loaded ConsoleAssets; none by default. */
  assets?: () => Promise<{ url(name: string): string }>
}

/**
 * Pure: where to go after signing in: a same-site path (`/workflows/x?phase=Failed`), else `/`.
 * Absolute URLs, `//host`, backslashes and the sign-in page itself are refused, so a link can
 * never send someone to another site with a fresh session.
 */
export function safeNext(next: string | undefined): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || /[\\\x00-\x1f\x7f]/.test(next)) return '/'
  const url = new URL(next, 'http://console.invalid')
  if (url.origin !== 'http://console.invalid' || url.pathname === '/signin' || url.pathname === '/signout') return '/'
  return `${url.pathname}${url.search}${url.hash}`
}

const MISSING_KEY = 'Sign-in is not available: the console has no session key. Create the Secret console-session with a key `key` holding 32 random bytes in base64 (for example: kubectl -n kinetic-system create secret generic console-session --from-literal=key="$(openssl rand -base64 32)"), which sets KINETIC_CONSOLE_SESSION_KEY, and restart the console.'

function signInForm(next: string, problem?: string): Html {
  const describedBy = problem ? 'token-help signin-problem' : 'token-help'
  return html`<h1>Sign in to Kinetic</h1>
<p>The console shows what your Kubernetes identity may see, and offers only the actions it may take. Sign in with a bearer token the cluster's API server accepts.</p>
${problem ? html`<p id="signin-problem" class="form-error" role="alert">${problem}</p>` : ''}
<form method="post" action="/signin" class="signin">
<input type="hidden" name="next" value="${next}">
<label for="token">Bearer token</label>
<input id="token" name="token" type="password" required autofocus autocomplete="off" autocapitalize="off" spellcheck="false" aria-describedby="${describedBy}"${problem ? html` aria-invalid="true"` : ''}>
<div id="token-help" class="help">
<p>Where to get one:</p>
<ul>
<li>A ServiceAccount's token: <code>kubectl create token &lt;service-account&gt; --namespace &lt;namespace&gt; --duration 8h</code></li>
<li>The token of your kubeconfig, if it has one: <code>kubectl config view --raw --minify --output jsonpath='{.users[0].user.token}'</code></li>
</ul>
<p>The token stays in this browser only, in an encrypted cookie for at most 8 hours; the console sends it to the Kubernetes API server and to run-control, nowhere else. Sign out to forget it.</p>
</div>
<button type="submit">Sign in</button>
</form>`
}

function messagePage(title: string, status: number, message: string): PageResult {
  return { status, title, nav: 'signin', body: html`<h1>${title}</h1><p role="alert">${message}</p>` }
}

/** GET /signin, POST /signin and POST /signout, mounted at '/'. */
export function signInRoutes(deps: ConsoleDeps, options: SignInOptions = {}): Hono {
  const app = new Hono()
  const render = async (c: Context, result: PageResult) => {
    // A page without its stylesheet still signs people in.
    const assets = await options.assets?.().catch(() => undefined)
    const assetUrl = assets ? (name: string) => assets.url(name) : () => ''
    return c.html(renderDocument({ config: deps.config, now: deps.now(), assetUrl }, result), result.status as 200, { 'cache-control': 'no-store' })
  }
  const form = (next: string, status: number, problem?: string): PageResult =>
    ({ status, title: 'Sign in', nav: 'signin', body: signInForm(next, problem) })
  const unavailable = (c: Context): Promise<Response> | undefined => {
    if (deps.config.auth !== 'token') {
      return render(c, messagePage('No sign-in here', 404, deps.config.auth === 'proxy'
        ? 'This console learns who you are from the authenticating proxy in front of it; there is nothing to sign in to.'
        : 'This is the local plane: you are its admin, with no sign-in.'))
    }
    if (!deps.config.sessionKey) return render(c, messagePage('Sign-in is not available', 503, MISSING_KEY))
    return undefined
  }
  const crossSite = (c: Context): Promise<Response> | undefined => (hasOwnOrigin(c, isFromTrustedProxy(deps, c))
    ? undefined
    : render(c, messagePage('Refused', 403, 'This form was sent from another site; open the console itself and try again.')))

  app.get('/signin', (c) => unavailable(c) ?? render(c, form(safeNext(c.req.query('next')), 200)))

  app.post('/signin', bodyLimit({ maxSize: MAX_SIGNIN_BYTES, onError: (c) => render(c, form('/', 413, 'That is too large to be a token.')) }), async (c) => {
    const refused = unavailable(c) ?? crossSite(c)
    if (refused) return await refused
    const body = await c.req.parseBody()
    const next = safeNext(typeof body.next === 'string' ? body.next : undefined)
    // People paste "Bearer <token>" from a header, or a line with its newline.
    const token = (typeof body.token === 'string' ? body.token : '').trim().replace(/^Bearer\s+/i, '')
    if (token === '' || /\s/.test(token)) return render(c, form(next, 400, 'Paste a bearer token: one word, no spaces.'))
    let identity: TokenIdentity
    try {
      identity = await deps.kubeFor({ kind: 'token', token }).whoAmI()
    } catch (err) {
      if (err instanceof TransientError) return render(c, form(next, 503, 'The Kubernetes API server is unavailable; try again shortly.'))
      deps.log.info({ error: err instanceof Error ? err.name : typeof err }, 'Sign-in refused: the API server did not accept the token')
      return render(c, form(next, 401, 'The API server did not accept this token.'))
    }
    const key = deps.config.sessionKey!
    const session: Session = newSession(token, identity.username, identity.groups ?? [], deps.now())
    let sealed = sealSession(key, session)
    // Groups are shown, never used for access (the token is): a long list is dropped before the token is.
    if (sealed.length > MAX_COOKIE_VALUE) sealed = sealSession(key, { ...session, groups: [] })
    if (sealed.length > MAX_COOKIE_VALUE) return render(c, form(next, 400, 'This token is too large to keep in a browser cookie; use a ServiceAccount token (kubectl create token).'))
    setCookie(c, SESSION_COOKIE, sealed, { path: '/', httpOnly: true, sameSite: 'Strict', secure: deps.config.secureCookies, maxAge: SESSION_TTL_SECONDS })
    deps.log.info({ user: identity.username }, 'Signed in')
    return c.redirect(next, 303)
  })

  app.post('/signout', async (c) => {
    const refused = crossSite(c)
    if (refused) return await refused
    deleteCookie(c, SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'Strict', secure: deps.config.secureCookies })
    return c.redirect('/signin', 303)
  })
  return app
}
