import {
  ApiException, AppsV1Api, AuthenticationV1Api, AuthorizationV1Api, BatchV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node'
import { ConflictError, ForbiddenError, TransientError, UnauthenticatedError } from '../../core/errors.js'
import { API_GROUP, API_VERSION_NAME } from '../../schemas/labels.js'
import type { z } from 'zod'

/**
 * Pure: a Kubernetes API failure as one of our errors. 409 → ConflictError (redeliver and
 * re-plan); no status, 429 and 5xx → TransientError (redeliver with backoff); any other 4xx is
 * our bug or missing RBAC → a plain Error (500), a 403 as ForbiddenError and a 401 as
 * UnauthenticatedError (still 500 in a function; the console shows a person what they may not
 * see, or asks them to sign in again). A downstream status is never passed through.
 */
export function classifyApiError(err: unknown, message: string): Error {
  const code = apiStatus(err)
  if (code === 409) return new ConflictError(message, { cause: err })
  if (code === undefined || code === 429 || code >= 500) return new TransientError(message, { cause: err })
  if (code === 403) return new ForbiddenError(message, { cause: err })
  if (code === 401) return new UnauthenticatedError(message, { cause: err })
  return new Error(message, { cause: err })
}

/** The HTTP status of a failed API call, when it has one. */
export function apiStatus(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code
  if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'number') {
    return (err as { code: number }).code
  }
  return undefined
}

/** Where a custom resource is served: CustomObjectsApi's coordinates. */
export interface ResourceRef { group: string; version: string; plural: string }

export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
export const FIELD_MANAGER = 'kinetic'

/**
 * The API clients of one KubeConfig, and the calls every verb makes through them: each failure
 * classified (`call`), a 404 read as null (`orNull`), an AlreadyExists as 'exists'
 * (`createIfAbsent`), and the reads and status writes that every purko kind shares.
 */
export class KubeApi {
  readonly core: CoreV1Api
  readonly batch: BatchV1Api
  readonly custom: CustomObjectsApi
  readonly rbac: RbacAuthorizationV1Api
  readonly apps: AppsV1Api
  readonly authn: AuthenticationV1Api
  readonly authz: AuthorizationV1Api

  /** Kept for the streams (Watch, Log), which take the KubeConfig rather than an API client. */
  constructor(readonly kubeConfig: KubeConfig) {
    this.authn = kubeConfig.makeApiClient(AuthenticationV1Api)
    this.authz = kubeConfig.makeApiClient(AuthorizationV1Api)
    this.apps = kubeConfig.makeApiClient(AppsV1Api)
    this.rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api)
    this.core = kubeConfig.makeApiClient(CoreV1Api)
    this.batch = kubeConfig.makeApiClient(BatchV1Api)
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi)
  }

  async call<T>(fn: () => Promise<T>, what: string): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw classifyApiError(err, `Could not ${what}`)
    }
  }

  async orNull<T>(fn: () => Promise<T>, what: string): Promise<T | null> {
    try {
      return await fn()
    } catch (err) {
      if (apiStatus(err) === 404) return null
      throw classifyApiError(err, `Could not ${what}`)
    }
  }

  async createIfAbsent(fn: () => Promise<unknown>, what: string): Promise<'created' | 'exists'> {
    try {
      await fn()
      return 'created'
    } catch (err) {
      if (apiStatus(err) === 409) return 'exists'
      throw classifyApiError(err, `Could not ${what}`)
    }
  }

  async getCustom<S extends z.ZodType>(
    ref: ResourceRef, schema: S, kind: string, namespace: string, name: string,
  ): Promise<z.output<S> | null> {
    const raw = await this.orNull(() => this.custom.getNamespacedCustomObject({ ...ref, namespace, name }), `get ${kind} ${namespace}/${name}`)
    return raw === null ? null : parseOrSkip(schema, raw)[0] ?? null
  }

  async listAllCustom<S extends z.ZodType>(ref: ResourceRef, schema: S): Promise<z.output<S>[]> {
    const list = await this.call(() => this.custom.listClusterCustomObject(ref), `list ${ref.plural}`)
    return itemsOf(list).flatMap((item) => parseOrSkip(schema, item))
  }

  async replaceCustomStatus<S extends z.ZodType>(
    ref: ResourceRef, schema: S, kind: string, namespace: string, name: string, resourceVersion: string, status: unknown,
  ): Promise<z.output<S>> {
    const raw = await this.call(
      () => this.custom.replaceNamespacedCustomObjectStatus({
        ...ref, namespace, name,
        body: { apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind, metadata: { name, namespace, resourceVersion }, status },
      }),
      `update status of ${kind} ${namespace}/${name}`,
    )
    return parseAs(schema, raw, `${kind} ${namespace}/${name}`)
  }

  /** JSON merge patch of a purko object's metadata (finalizers, annotations), guarded by resourceVersion. */
  async patchCustomMetadata<S extends z.ZodType>(
    ref: ResourceRef, schema: S, kind: string, namespace: string, name: string, resourceVersion: string, metadata: Record<string, unknown>,
  ): Promise<z.output<S>> {
    const body = { metadata: { ...metadata, resourceVersion } }
    const raw = await this.call(
      () => this.custom.patchNamespacedCustomObject({ ...ref, namespace, name, body }, MERGE_PATCH),
      `patch metadata of ${kind} ${namespace}/${name}`,
    )
    return parseAs(schema, raw, `${kind} ${namespace}/${name}`)
  }

  async listCustom<S extends z.ZodType>(namespace: string, plural: string, schema: S): Promise<z.output<S>[]> {
    const list = await this.call(
      () => this.custom.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION_NAME, namespace, plural }),
      `list ${plural} in ${namespace}`,
    )
    return itemsOf(list).flatMap((item) => parseOrSkip(schema, item))
  }
}

/** A label selector matching every one of these labels. */
export function selector(labels: Record<string, string>): string {
  return Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',')
}

/** The items of a list answer (none when it has no array of them). */
export function itemsOf(list: unknown): unknown[] {
  const items = (list as { items?: unknown }).items
  return Array.isArray(items) ? items : []
}

/** An object the API server sent, read through its schema; throws when it does not match. */
export function parseAs<S extends z.ZodType>(schema: S, raw: unknown, what: string): z.output<S> {
  const result = schema.safeParse(raw)
  if (!result.success) throw new Error(`${what} does not match its schema: ${result.error.issues[0]?.message ?? 'invalid'}`)
  return result.data
}

/** Objects that fail their schema are skipped in lists rather than failing the whole call. */
export function parseOrSkip<S extends z.ZodType>(schema: S, raw: unknown): z.output<S>[] {
  const result = schema.safeParse(raw)
  return result.success ? [result.data] : []
}
