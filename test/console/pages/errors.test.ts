import { describe, expect, it } from 'vitest'
import { errorPage, notFoundPage, notIdentifiedPage, refusedAction } from '../../../shared/console/pages/errors.js'
import { ForbiddenError, TransientError, UnauthenticatedError } from '../../../shared/core/errors.js'
import { ALICE, configOf, textOf } from './support.js'

describe('the error pages', () => {
  it('answers a refusal with 403 naming the person and what they may not do', () => {
    const err = new ForbiddenError('workflows.purko.io is forbidden: User "alice" cannot list resource "workflows" in API group "purko.io" in the namespace "team-b"')
    const page = errorPage(err, ALICE)
    expect(page.status).toBe(403)
    expect(page.nav).toBe('error')
    expect(textOf(page.body)).toContain('You (alice) may not list workflows.purko.io in namespace team-b.')
    expect(refusedAction('User "bob" cannot get resource "pods/log" at the cluster scope')).toBe('get pods/log across all namespaces')
    expect(refusedAction('something else')).toBeUndefined()
    expect(textOf(errorPage(new ForbiddenError('no'), { ...ALICE, name: '<script>x</script>' }).body)).toContain('You (<script>x</script>) may not see this.')
    expect(errorPage(new ForbiddenError('no'), { ...ALICE, name: '<script>x</script>' }).body.html).not.toContain('<script>')
  })

  it('answers an API outage with 503 and anything else with 500 that shows no internals', () => {
    expect(errorPage(new TransientError('etcd timeout')).status).toBe(503)
    const bug = errorPage(new Error('token=sk-secret in a stack'))
    expect(bug.status).toBe(500)
    expect(bug.body.html).not.toContain('sk-secret')
  })

  it('asks someone whose token the API server no longer accepts (expired, revoked) to sign in again, with 401', () => {
    const page = errorPage(new UnauthenticatedError('Unauthorized'), { ...ALICE, mode: 'token', credential: { kind: 'token', token: 't' } })
    expect(page.status).toBe(401)
    expect(textOf(page.body)).toContain('no longer accepts the credentials this console uses for you')
    expect(page.body.html).toContain('<form method="post" action="/signout" data-signout><button type="submit" class="button">Sign in again</button></form>')
    // Behind a proxy there is nothing for the person to sign in to.
    expect(errorPage(new UnauthenticatedError('Unauthorized'), { ...ALICE, mode: 'proxy' }).body.html).not.toContain('/signout')
  })

  it('has a 404 page and a not-identified page for each way of signing in', () => {
    const missing = notFoundPage('Workflow team-a/<b>x</b>')
    expect(missing.status).toBe(404)
    expect(missing.body.html).toContain('Workflow team-a/&lt;b&gt;x&lt;/b&gt; was not found')
    const proxy = notIdentifiedPage(configOf({ auth: 'proxy' }))
    expect(proxy.status).toBe(401)
    expect(textOf(proxy.body)).toContain('The authenticating proxy in front of the console did not say who you are')
    const token = notIdentifiedPage(configOf({ auth: 'token' }))
    expect(token.body.html).toContain('href="/signin"')
  })
})
