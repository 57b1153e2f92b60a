/**
 * Canonical JSON and digests of desired manifests (spec §5.3 `purko.io/manifest-digest`,
 * spec §5.2 content hashes, §7.9 snapshot digest). Pure: the same value always gives the same bytes.
 *
 * Canonical JSON: object keys sorted by UTF-16 code unit order at every level, `undefined`
 * members dropped, arrays kept in order, no whitespace (JSON.stringify's number and string
 * forms).
 */
import { sha256Hex } from '../../core/sha256.js'
import { ANNOTATION_MANIFEST_DIGEST, LABEL_REVISION } from './labels.js'

/** Canonical JSON text of a JSON-like value. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value))
}

/** The value with every object's keys sorted (a new value; the input is not changed). */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : sortKeys(v)))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key]
      if (v !== undefined) out[key] = sortKeys(v)
    }
    return out
  }
  return value
}

/** Full lowercase hex SHA-256 of the canonical JSON of `value`. */
export function sha256OfCanonical(value: unknown): string {
  return sha256Hex(canonicalJson(value))
}

interface WithMetadata {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }
  [field: string]: unknown
}

/**
 * spec §5.3: first 16 hex of SHA-256 of the canonical desired manifest, without the
 * `purko.io/manifest-digest` annotation and the `purko.io/revision` label (so an unchanged
 * object written by a later revision keeps its digest). Empty label/annotation maps left by the
 * removal are dropped too.
 */
export function manifestDigest(manifest: WithMetadata): string {
  const meta = manifest.metadata ?? {}
  const labels = { ...(meta.labels ?? {}) }
  delete labels[LABEL_REVISION]
  const annotations = { ...(meta.annotations ?? {}) }
  delete annotations[ANNOTATION_MANIFEST_DIGEST]
  const stripped = {
    ...manifest,
    metadata: {
      ...meta,
      labels: Object.keys(labels).length > 0 ? labels : undefined,
      annotations: Object.keys(annotations).length > 0 ? annotations : undefined,
    },
  }
  return sha256OfCanonical(stripped).slice(0, 16)
}

/** The manifest with its `purko.io/manifest-digest` annotation set (a new object). */
export function withDigest<T extends WithMetadata>(manifest: T): T & { metadata: { annotations: Record<string, string> } } {
  const digest = manifestDigest(manifest)
  const meta = manifest.metadata ?? {}
  return {
    ...manifest,
    metadata: { ...meta, annotations: { ...(meta.annotations ?? {}), [ANNOTATION_MANIFEST_DIGEST]: digest } },
  }
}
