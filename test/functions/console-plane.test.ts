import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { localConsoleEnv } from '../../local/function-env.js'
import { consoleConfig } from '../../shared/console/auth/config.js'

/** What the local plane tells the console, read back by the console's own configuration parser. */
describe('the console on the local plane', () => {
  it('on the embedded API server: the local admin, actions on, plain-HTTP cookies, the local run-control', () => {
    const config = consoleConfig(localConsoleEnv('http://127.0.0.1:40123'))
    expect(config).toMatchObject({ auth: 'local', actions: true, secureCookies: false, runControlUrl: 'http://127.0.0.1:40123', anonymousRead: false })
  })

  it('against a cluster: people sign in with their own token, sealed with the key the plane made', () => {
    const key = randomBytes(32)
    const config = consoleConfig(localConsoleEnv('http://127.0.0.1:40123', { sessionKey: key.toString('base64') }))
    expect(config).toMatchObject({ auth: 'token', actions: true, secureCookies: false, runControlUrl: 'http://127.0.0.1:40123' })
    expect(config.sessionKey?.equals(key)).toBe(true)
  })
})
