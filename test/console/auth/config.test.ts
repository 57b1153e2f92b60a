// The console's configuration: defaults a fresh install gets, and every value that cannot work
// refused at start with the variable named.
import { describe, expect, it } from 'vitest'
import { consoleConfig, ConsoleConfigError, DEFAULT_RUN_CONTROL_URL } from '../../../shared/console/auth/config.js'

const KEY = Buffer.alloc(32, 1).toString('base64')

describe('consoleConfig', () => {
  it('defaults to token sign-in, read only, no anonymous reading, in-cluster run-control, the agent namespace, Secure cookies', () => {
    expect(consoleConfig({})).toEqual({
      auth: 'token', trustedProxies: [], actions: false, anonymousRead: false, runControlUrl: DEFAULT_RUN_CONTROL_URL,
      namespaces: ['ai-agents'], agentNamespace: 'ai-agents', secureCookies: true,
    })
  })

  it('reads every variable', () => {
    const config = consoleConfig({
      KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '10.0.0.0/8, fd00::/8,127.0.0.1',
      KINETIC_CONSOLE_ACTIONS: 'true', KINETIC_CONSOLE_ANONYMOUS_READ: 'true', KINETIC_RUN_CONTROL_URL: 'http://127.0.0.1:9090/',
      KINETIC_CONSOLE_NAMESPACES: 'team-a,team-b,team-a', KINETIC_AGENT_NAMESPACE: 'agents', KINETIC_CONSOLE_SESSION_KEY: `${KEY}\n`,
      KINETIC_CONSOLE_SECURE_COOKIES: 'false', KINETIC_CONSOLE_PROXY_SECRET: 'p'.repeat(32),
    })
    expect(config).toEqual({
      auth: 'proxy', trustedProxies: ['10.0.0.0/8', 'fd00::/8', '127.0.0.1'], proxySecret: 'p'.repeat(32), actions: true, anonymousRead: true,
      runControlUrl: 'http://127.0.0.1:9090', namespaces: ['team-a', 'team-b'], agentNamespace: 'agents',
      sessionKey: Buffer.alloc(32, 1), secureCookies: false,
    })
  })

  it('lists the agent namespace when no namespaces are given', () => {
    expect(consoleConfig({ KINETIC_AGENT_NAMESPACE: 'agents' }).namespaces).toEqual(['agents'])
  })

  it('starts in token mode without a session key (sign-in then says the Secret is missing)', () => {
    expect(consoleConfig({ KINETIC_CONSOLE_AUTH: 'token' }).sessionKey).toBeUndefined()
  })

  it.each([
    ['KINETIC_CONSOLE_AUTH', { KINETIC_CONSOLE_AUTH: 'oidc' }, 'KINETIC_CONSOLE_AUTH must be one of "proxy", "token", "local", got "oidc"'],
    ['KINETIC_CONSOLE_TRUSTED_PROXIES', { KINETIC_CONSOLE_TRUSTED_PROXIES: '10.0.0.0/33' }, 'KINETIC_CONSOLE_TRUSTED_PROXIES: "10.0.0.0/33" is not'],
    ['KINETIC_CONSOLE_TRUSTED_PROXIES', { KINETIC_CONSOLE_TRUSTED_PROXIES: 'proxy.internal' }, 'KINETIC_CONSOLE_TRUSTED_PROXIES: "proxy.internal" is not'],
    ['KINETIC_CONSOLE_TRUSTED_PROXIES', { KINETIC_CONSOLE_AUTH: 'proxy' }, 'KINETIC_CONSOLE_AUTH=proxy needs KINETIC_CONSOLE_TRUSTED_PROXIES'],
    ['KINETIC_CONSOLE_ACTIONS', { KINETIC_CONSOLE_ACTIONS: 'yes' }, 'KINETIC_CONSOLE_ACTIONS must be "true" or "false", got "yes"'],
    ['KINETIC_CONSOLE_ANONYMOUS_READ', { KINETIC_CONSOLE_ANONYMOUS_READ: '1' }, 'KINETIC_CONSOLE_ANONYMOUS_READ must be "true" or "false"'],
    ['KINETIC_CONSOLE_SECURE_COOKIES', { KINETIC_CONSOLE_SECURE_COOKIES: 'off' }, 'KINETIC_CONSOLE_SECURE_COOKIES must be "true" or "false"'],
    ['KINETIC_RUN_CONTROL_URL', { KINETIC_RUN_CONTROL_URL: 'run-control:80' }, 'KINETIC_RUN_CONTROL_URL must be an http(s) URL'],
    ['KINETIC_CONSOLE_NAMESPACES', { KINETIC_CONSOLE_NAMESPACES: 'team-a,Team_B' }, 'KINETIC_CONSOLE_NAMESPACES: "Team_B" is not a namespace name'],
    ['KINETIC_AGENT_NAMESPACE', { KINETIC_AGENT_NAMESPACE: 'ai agents' }, 'KINETIC_AGENT_NAMESPACE must be a namespace name'],
    ['a session key of 16 bytes', { KINETIC_CONSOLE_SESSION_KEY: Buffer.alloc(16, 1).toString('base64') }, 'KINETIC_CONSOLE_SESSION_KEY must be the base64 of 32 random bytes'],
    ['a session key that is not base64', { KINETIC_CONSOLE_SESSION_KEY: `${KEY.slice(0, 20)}!!${KEY.slice(20)}` }, 'KINETIC_CONSOLE_SESSION_KEY must be the base64 of 32 random bytes'],
  ])('refuses a bad %s, naming the variable', (_, env, message) => {
    expect(() => consoleConfig(env)).toThrow(ConsoleConfigError)
    expect(() => consoleConfig(env)).toThrow(message)
  })

  it('never repeats the session key in its message', () => {
    const bad = 'c2VjcmV0LXNlc3Npb24ta2V5LXZhbHVl'
    expect(() => consoleConfig({ KINETIC_CONSOLE_SESSION_KEY: bad })).toThrow(/not shown/)
    try {
      consoleConfig({ KINETIC_CONSOLE_SESSION_KEY: bad })
    } catch (err) {
      expect((err as Error).message).not.toContain(bad)
    }
  })

  it('refuses a proxy secret short enough to guess', () => {
    expect(() => consoleConfig({ KINETIC_CONSOLE_PROXY_SECRET: 'short' })).toThrow(/KINETIC_CONSOLE_PROXY_SECRET must be at least 32 characters/)
  })
})
