/**
 * POST /actions/<path>: the console's buttons, forwarded to run-control's `/api/<path>` as the
 * person using the console. The console never writes to Kubernetes itself: run-control checks
 * the person's rights and records who asked. Token mode sends the person's own token; proxy
 * mode the console ServiceAccount's token with Impersonate-User/-Group (run-control checks the
 * console may impersonate them); the local plane sends Impersonate-User so records name its admin.
 * The person's cookie never leaves the console, and no token is logged.
 */
import { Hono, type Context } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import type { ConsoleDeps, Person } from '../context.js'
import { CONSOLE_HEADER, isConsolePost } from './csrf.js'
import { isFromTrustedProxy, personFor } from './person.js'

/** Largest action body forwarded (run-control's own limit). */
export const MAX_ACTION_BYTES = 64 * 1024
/** How long run-control may take to answer. */
export const RUN_CONTROL_TIMEOUT_MS = 10_000

// Of run-control's answer headers, only these mean something to the browser's script.
const PASSED_BACK = ['content-type', 'retry-after']

type Refusal = { error: string; message: string }

/**
 * Pure: the headers that carry the person to run-control, beside the JSON content type; null
 * when the person's rights cannot be carried (proxy mode without the console's own token).
 */
export function forwardedIdentity(person: Person, ownToken: string | undefined): Headers | null {
  const headers = new Headers()
  const impersonate = (user: string, groups: readonly string[], uid?: string) => {
    headers.set('impersonate-user', user)
    for (const group of groups) headers.append('impersonate-group', group)
    if (uid) headers.set('impersonate-uid', uid)
  }
  const credential = person.credential
  switch (credential.kind) {
    case 'token':
      headers.set('authorization', `Bearer ${credential.token}`)
      return headers
    case 'impersonate':
      if (!ownToken) return null
      headers.set('authorization', `Bearer ${ownToken}`)
      impersonate(credential.user, credential.groups, credential.uid)
      return headers
    case 'own':
      // The local plane: run-control runs without caller checks there, the name is what is recorded.
      impersonate(person.name, person.groups)
      return headers
  }
}

/** The action endpoints, mounted at '/actions'. */
export function actionRoutes(deps: ConsoleDeps): Hono {
  const app = new Hono()
  const runControl = deps.config.runControlUrl ?? ''
  const refuse = (c: Context, status: 401 | 403 | 413 | 503, body: Refusal) => c.json(body, status, { 'cache-control': 'no-store' })

  app.post('/*', async (c, next) => {
    if (!isConsolePost(c, isFromTrustedProxy(deps, c))) {
      return refuse(c, 403, { error: 'forbidden', message: `Actions must come from the console's own pages (header ${CONSOLE_HEADER}: 1, and the console's Origin)` })
    }
    if (!deps.config.actions) {
      return refuse(c, 403, { error: 'read_only', message: 'This console is read only (KINETIC_CONSOLE_ACTIONS is not true)' })
    }
    return next()
  }, bodyLimit({
    maxSize: MAX_ACTION_BYTES,
    onError: (c) => refuse(c, 413, { error: 'payload_too_large', message: `The body must be at most ${MAX_ACTION_BYTES} bytes` }),
  }), async (c) => {
    const person = await personFor(deps, c)
    if (!person || person.mode === 'anonymous') {
      return refuse(c, 401, { error: 'unauthorized', message: deps.config.auth === 'token' ? 'Sign in to act: you are not signed in, or your sign-in has expired' : 'The proxy in front of the console did not say who you are' })
    }
    const ownToken = person.credential.kind === 'impersonate' ? await deps.ownToken?.() : undefined
    const headers = forwardedIdentity(person, ownToken)
    if (!headers) return refuse(c, 503, { error: 'unavailable', message: 'The console has no ServiceAccount token to call run-control with' })
    headers.set('content-type', 'application/json')
    const idempotencyKey = c.req.header('idempotency-key')
    if (idempotencyKey) headers.set('idempotency-key', idempotencyKey)

    const path = new URL(c.req.url).pathname
    const rest = path.slice(path.indexOf('/actions/') + '/actions/'.length)
    const target = `${runControl}/api/${rest}`
    const body = await c.req.text()
    const start = performance.now()
    let answer: Response
    try {
      answer = await (deps.fetch ?? fetch)(target, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(RUN_CONTROL_TIMEOUT_MS) })
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
      deps.log.warn({ action: rest, user: person.name, timedOut, reason: err instanceof Error ? err.message : String(err) }, 'Could not reach run-control for a console action')
      return refuse(c, 503, { error: 'unavailable', message: timedOut
        ? `run-control (${runControl}) did not answer within ${RUN_CONTROL_TIMEOUT_MS / 1000} s; try again shortly`
        : `run-control (${runControl}) is unreachable; try again shortly` })
    }
    const text = await answer.text()
    deps.log.info({ action: rest, user: person.name, mode: person.mode, status: answer.status, ms: Math.round(performance.now() - start) }, 'Console action forwarded to run-control')
    const back: Record<string, string> = { 'cache-control': 'no-store' }
    for (const name of PASSED_BACK) {
      const value = answer.headers.get(name)
      if (value) back[name] = value
    }
    return c.body(text, answer.status as 200, back)
  })

  app.all('/*', (c) => c.json({ error: 'method_not_allowed', message: 'POST required' }, 405, { Allow: 'POST' }))
  return app
}
