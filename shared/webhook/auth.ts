/**
 * Who may start a run of a template over its webhook: a request signed with the template's
 * secret (`spec.trigger.webhook.secret`), or anyone when the template opts in with
 * `allowUnauthenticated: true` (unsafe). Every refusal says why, for the template's Warning Event
 * (never the secret, never the signature); the caller only ever hears 401.
 */
import { grantCommand, WEBHOOK_GRANT } from '../core/namespace-access.js'
import type { Workflow } from '../schemas/workflow.js'
import { hasSignature, REPLAY_WINDOW_SECONDS, verifySignature, type SignatureFailure, type SignatureHeaders, type SignatureScheme } from './signature.js'

/** The Secret key holding the HMAC secret when the reference names none. */
export const DEFAULT_SECRET_KEY = 'secret'

/** Why a call was refused: the reason of the template's Warning Event. */
export type RefusalReason = 'WebhookNotConfigured' | 'WebhookSecretMissing' | 'WebhookSecretForbidden' | 'WebhookSignatureInvalid'

export interface Refusal {
  outcome: 'refuse'
  reason: RefusalReason
  /** For the Event and the log: what is wrong and how to fix it. */
  message: string
}

export interface Acceptance {
  outcome: 'accept'
  /** How the caller was authenticated; `unauthenticated` only under allowUnauthenticated. */
  scheme: SignatureScheme | 'unauthenticated'
  /** The signed `t=` of X-Kinetic-Signature (unix seconds). */
  timestamp?: number
}

/** The Secret to read before verifying. */
export interface SecretToRead {
  outcome: 'verify'
  namespace: string
  name: string
  key: string
}

const PREFIX = 'Refused a webhook call'

/**
 * Pure: what a request needs before it is accepted: a final answer when the template's
 * configuration decides it alone, else the Secret to read. The Secret must be in the template's
 * own namespace: the function may read Secrets in every namespace that granted it, and a template
 * author must not borrow one of another namespace as an HMAC key (an oracle for its value).
 */
export function planAuth(template: Workflow, headers: SignatureHeaders): Acceptance | Refusal | SecretToRead {
  const webhook = template.spec.trigger?.webhook
  const ref = webhook?.secret
  const open = webhook?.allowUnauthenticated === true
  const namespace = template.metadata.namespace ?? ''
  if (!hasSignature(headers)) {
    if (open) return { outcome: 'accept', scheme: 'unauthenticated' }
    if (!ref?.name) return notConfigured()
    return { outcome: 'refuse', reason: 'WebhookSignatureInvalid', message: `${PREFIX}: it carries no X-Hub-Signature-256 or X-Kinetic-Signature header` }
  }
  if (!ref?.name) return open ? { outcome: 'accept', scheme: 'unauthenticated' } : notConfigured()
  const secretNamespace = ref.namespace && ref.namespace !== '' ? ref.namespace : namespace
  if (secretNamespace !== namespace) {
    return {
      outcome: 'refuse', reason: 'WebhookSecretForbidden',
      message: `${PREFIX}: spec.trigger.webhook.secret names namespace ${secretNamespace}; the Secret must be in the template's namespace ${namespace}`,
    }
  }
  return { outcome: 'verify', namespace, name: ref.name, key: ref.key && ref.key !== '' ? ref.key : DEFAULT_SECRET_KEY }
}

function notConfigured(): Refusal {
  return {
    outcome: 'refuse', reason: 'WebhookNotConfigured',
    message: `${PREFIX}: the template has no spec.trigger.webhook.secret (set one; allowUnauthenticated: true accepts unsigned calls from anyone who can reach the endpoint, which is unsafe)`,
  }
}

/** Pure: the secret's bytes from a Secret as the API returns it (`data` is base64), or why there are none. */
export function secretValue(secret: { data?: Record<string, string>; stringData?: Record<string, string> } | null, ref: SecretToRead): Uint8Array | Refusal {
  const where = `Secret ${ref.namespace}/${ref.name}`
  if (secret === null) return missing(`${where} does not exist`)
  const encoded = secret.data?.[ref.key]
  const bytes = encoded !== undefined ? Buffer.from(encoded, 'base64') : secret.stringData?.[ref.key] !== undefined ? Buffer.from(secret.stringData[ref.key] as string, 'utf8') : undefined
  if (bytes === undefined) return missing(`${where} has no key "${ref.key}"`)
  if (bytes.length === 0) return missing(`${where} key "${ref.key}" is empty`)
  return bytes
}

/**
 * Pure: the refusal when webhook-trigger may not read the template's Secret: it reads Secrets
 * only in namespaces that granted it (RoleBinding to kinetic-webhook-secrets).
 */
export function notGranted(ref: SecretToRead): Refusal {
  return {
    outcome: 'refuse', reason: 'WebhookSecretForbidden',
    message: `${PREFIX}: webhook-trigger may not read Secret ${ref.namespace}/${ref.name}; to let it: ${grantCommand(WEBHOOK_GRANT, ref.namespace)}`,
  }
}

function missing(what: string): Refusal {
  return { outcome: 'refuse', reason: 'WebhookSecretMissing', message: `${PREFIX}: ${what}` }
}

const FAILURE_WORDS: Record<SignatureFailure, (scheme?: SignatureScheme) => string> = {
  missing: () => 'it carries no X-Hub-Signature-256 or X-Kinetic-Signature header',
  malformed: (s) => (s === 'kinetic' ? 'its X-Kinetic-Signature header is malformed (want t=<unix seconds>,v1=<hex HMAC-SHA256>)' : 'its X-Hub-Signature-256 header is malformed (want sha256=<hex HMAC-SHA256>)'),
  mismatch: (s) => `its ${s === 'kinetic' ? 'X-Kinetic-Signature' : 'X-Hub-Signature-256'} signature does not match the body and the template's secret`,
  stale: () => `its X-Kinetic-Signature timestamp is more than ${REPLAY_WINDOW_SECONDS} s from now (a replay, or the sender's clock is off)`,
}

/** Pure: the verdict on a signed request, with the secret's bytes. */
export function verifyRequest(secret: Uint8Array, rawBody: Uint8Array, headers: SignatureHeaders, now: Date): Acceptance | Refusal {
  const v = verifySignature(secret, rawBody, headers, now)
  if (v.ok) return { outcome: 'accept', scheme: v.scheme, ...(v.scheme === 'kinetic' ? { timestamp: v.timestamp } : {}) }
  return { outcome: 'refuse', reason: 'WebhookSignatureInvalid', message: `${PREFIX}: ${FAILURE_WORDS[v.reason](v.scheme)}` }
}
