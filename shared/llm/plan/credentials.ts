import type { LLMProvider } from '../../schemas/llmprovider.js'

/** What reading the provider's credentials Secret found (the shell reads it; nothing here does I/O). */
export type SecretLookup =
  /** No Secret named: nothing was read. */
  | { state: 'none' }
  /** The Secret does not exist (404). */
  | { state: 'missing' }
  /** The API server refused the read: 403, no Role there lets llmprovider-changed get it. */
  | { state: 'forbidden' }
  /** The Secret exists; `value` is the decoded key, absent when the Secret lacks it. */
  | { state: 'found'; value?: string }

/** purko's LLMProvider credentials check, with its reasons and messages. */
export interface CredentialsCheck {
  valid: boolean
  /** `NoCredentialsRequired`, `SecretFound`, `CredentialsInvalid`, or `SecretForbidden` (a 403 reading the Secret). */
  reason: 'NoCredentialsRequired' | 'SecretFound' | 'CredentialsInvalid' | 'SecretForbidden'
  /** Message of the CredentialsValid condition (names the Secret, never its content). */
  message: string
  /** The key itself, for the probe only: never logged, never in a status, an Event or a message. */
  secret?: string
}

/** purko's message for invalid credentials (Ready condition and status.message). */
export const CREDENTIALS_INVALID_MESSAGE = 'Credentials not found or invalid'

/** The ServiceAccount llmprovider-changed runs as (knative/rbac/llmprovider-changed.yaml). */
const FUNCTION_ACCOUNT = 'kinetic-system:llmprovider-changed'

/** Pure: the kubectl commands that let llmprovider-changed read one Secret of a namespace (a Role per Secret, so several providers' grants do not clash). */
export function secretGrantCommand(namespace: string, secret: string): string {
  const role = `kinetic-llmprovider-${secret}`
  return `kubectl create role ${role} -n ${namespace} --verb=get --resource=secrets --resource-name=${secret} && `
    + `kubectl create rolebinding ${role} -n ${namespace} --role=${role} --serviceaccount=${FUNCTION_ACCOUNT}`
}

/** Pure: the Secret name the provider's credentials live in, or undefined when it names none. */
export function credentialsSecretName(provider: LLMProvider): string | undefined {
  const ref = provider.spec.credentials?.secretRef
  return ref ? ref : undefined
}

/** Pure: the key read from that Secret: `secretKey`, else `api-key` (`credentials.json` for vertex-ai). */
export function credentialsKeyOf(provider: LLMProvider): string {
  const key = provider.spec.credentials?.secretKey
  if (key) return key
  return provider.spec.type === 'vertex-ai' ? 'credentials.json' : 'api-key'
}

/**
 * Pure: purko's Secret-presence steps. No Secret named is valid only for ollama and custom (reason
 * NoCredentialsRequired when `credentials` is absent; purko's SecretFound with an empty name
 * when the block is there without a secretRef); otherwise the Secret must exist in the
 * provider's namespace and carry the key.
 */
export function checkCredentials(provider: LLMProvider, lookup: SecretLookup): CredentialsCheck {
  const { type, credentials } = provider.spec
  const name = credentialsSecretName(provider)
  const invalid = (message: string): CredentialsCheck => ({ valid: false, reason: 'CredentialsInvalid', message })
  if (!name) {
    if (type !== 'ollama' && type !== 'custom') return invalid(`${CREDENTIALS_INVALID_MESSAGE}: a ${type} provider needs spec.credentials.secretRef`)
    return credentials === undefined
      ? { valid: true, reason: 'NoCredentialsRequired', message: 'No credentials required' }
      : { valid: true, reason: 'SecretFound', message: `Credentials loaded from ${credentials.secretRef ?? ''}` }
  }
  const namespace = provider.metadata.namespace ?? ''
  switch (lookup.state) {
    case 'none':
    case 'missing':
      return invalid(`${CREDENTIALS_INVALID_MESSAGE}: Secret ${name} not found in namespace ${namespace}`)
    case 'forbidden':
      // Not the user's credentials but Kinetic's rights: say so, and the one grant that fixes it.
      return {
        valid: false, reason: 'SecretForbidden',
        message: `Reading Secret ${namespace}/${name} is forbidden to llmprovider-changed (no Role in ${namespace} grants it get); allow it with: ${secretGrantCommand(namespace, name)}`,
      }
    case 'found':
      if (lookup.value === undefined) return invalid(`${CREDENTIALS_INVALID_MESSAGE}: Secret ${name} has no key ${credentialsKeyOf(provider)}`)
      return { valid: true, reason: 'SecretFound', message: `Credentials loaded from ${name}`, secret: lookup.value }
  }
}
