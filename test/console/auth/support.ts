// What the console's auth tests are built from: a Kube per credential that answers
// SelfSubjectReview and SelfSubjectAccessReview for that credential's identity from EmbeddedKube's
// tokens and grants, console deps, and a console app served on 127.0.0.1.
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import type { Hono } from 'hono'
import { pino } from 'pino'
import { consoleConfig } from '../../../shared/console/auth/config.js'
import type { ConsoleConfig, ConsoleDeps } from '../../../shared/console/context.js'
import { TransientError } from '../../../shared/core/errors.js'
import type { AccessAttributes, Credential, TokenIdentity } from '../../../shared/kube/port.js'
import type { Logger } from '../../../shared/log.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'

export const NOW = new Date('2026-03-01T10:00:00.000Z')
export const SESSION_KEY = Buffer.alloc(32, 7).toString('base64')

/** The API server as the console's credentials see it: one EmbeddedKube for tokens and grants. */
export class Cluster {
  /** One cluster at a time: a test that made its own passes it. */
  constructor(readonly kube: EmbeddedKube = new EmbeddedKube({ identities: false })) {}
  /** Tokens for which SelfSubjectReview fails as if the API server were down. */
  readonly unavailable = new Set<string>()
  /** Every credential a Kube was asked for (never logged anywhere). */
  readonly credentials: Credential[] = []
  /** The console's own ServiceAccount, for `own`. */
  own: TokenIdentity = { username: 'system:serviceaccount:kinetic-system:console', groups: ['system:authenticated'] }

  kubeFor = (credential: Credential): EmbeddedKube => {
    this.credentials.push(credential)
    const cluster = this
    const identity = (): TokenIdentity => {
      switch (credential.kind) {
        case 'own': return cluster.own
        case 'impersonate': return { username: credential.user, groups: [...credential.groups, 'system:authenticated'] }
        case 'token': {
          if (cluster.unavailable.has(credential.token)) throw new TransientError('The API server is unavailable')
          const known = cluster.kube.tokens.get(credential.token)
          if (!known) throw new Error('Unauthorized (401)')
          return known
        }
      }
    }
    return Object.assign(Object.create(this.kube) as EmbeddedKube, {
      whoAmI: async () => identity(),
      reviewSelfAccess: async (attributes: readonly AccessAttributes[]) => {
        const who = identity()
        return Promise.all(attributes.map((a) => cluster.kube.reviewAccess(who, a)))
      },
    })
  }
}

/** A logger whose lines the test reads. */
export function capturingLog(): { log: Logger; lines: string[] } {
  const lines: string[] = []
  return { log: pino({ level: 'debug' }, { write: (l: string) => void lines.push(l) }) as Logger, lines }
}

/** Console deps from these environment values (token mode with a session key unless told otherwise). */
export function consoleDeps(env: Record<string, string> = {}, extra: Partial<ConsoleDeps> = {}, kube?: EmbeddedKube): { deps: ConsoleDeps; cluster: Cluster; lines: string[]; config: ConsoleConfig } {
  const cluster = new Cluster(kube)
  const { log, lines } = capturingLog()
  const config = consoleConfig({ KINETIC_CONSOLE_SESSION_KEY: SESSION_KEY, ...env })
  return { deps: { config, log, now: () => NOW, kubeFor: cluster.kubeFor, ...extra }, cluster, lines, config }
}

/** Serves the app on 127.0.0.1 (a real socket, so the peer address is real); `close` when done. */
export async function listen(app: Hono): Promise<{ url: string; close: () => Promise<void> }> {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      })
    })
  })
}
