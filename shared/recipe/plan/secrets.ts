/**
 * Copied Secrets (spec §5.8, §2.5): the desired shape only. Only the named keys leave the
 * source Secret (in the recipe's namespace): an `Opaque` Secret `base(w)-env` (tests:
 * `shorten(<ns>-<recipe>-test-<t>, 43)-<identity>-env`, spec §5.2) in the target namespace whose keys are the
 * environment variable names, and `base(w)-mcp-token` with the single key `token`. The bytes come
 * from the caller ({@link withSecretData}); the manifest here, its digest and the snapshot never
 * hold a value. Pure.
 */
import { ANNOTATION_SOURCE_SECRET, childLabels, LABEL_TEST, workloadRelatedLabels, type RecipeRef } from './labels.js'
import { childMeta, type Manifest, type SecretCopy, type SecretCopySource } from './objects.js'
import type { EnvSecretSource } from './pod-template.js'

/** `<namespace>/<name>[,...]` of the distinct source Secrets, in order of first use. */
export function sourceSecretAnnotation(sources: SecretCopySource[]): string {
  const seen: string[] = []
  for (const s of sources) {
    const ref = `${s.namespace}/${s.name}`
    if (!seen.includes(ref)) seen.push(ref)
  }
  return seen.join(',')
}

/** The copy plan of `envSecret[]`: one key per variable, read from the recipe's namespace. */
export function envSecretCopy(recipe: RecipeRef, targetNamespace: string, targetName: string, envSecret: EnvSecretSource[]): SecretCopy {
  return {
    kind: 'SecretCopy',
    namespace: targetNamespace,
    name: targetName,
    sources: envSecret.map((e) => ({ namespace: recipe.namespace, name: e.secretName, key: e.key, env: e.name, optional: e.optional ?? false })),
  }
}

/** The copy plan of `mcp.tokenSecret`: the single key `token`. */
export function tokenSecretCopy(recipe: RecipeRef, targetNamespace: string, targetName: string, tokenSecret: { secretName: string; key: string }): SecretCopy {
  return {
    kind: 'SecretCopy',
    namespace: targetNamespace,
    name: targetName,
    sources: [{ namespace: recipe.namespace, name: tokenSecret.secretName, key: tokenSecret.key, env: 'token', optional: false }],
  }
}

/** Owner of a copied Secret: a workload or a test. */
export type SecretOwner = { workload: string } | { test: string }

/** The desired Secret of a copy, without `data` and without digest. */
export function copiedSecretManifest(recipe: RecipeRef, copy: SecretCopy, owner: SecretOwner, revision: number): Manifest {
  const labels = 'workload' in owner
    ? workloadRelatedLabels(recipe, 'secret', owner.workload, revision)
    : { ...childLabels(recipe, 'secret', revision), [LABEL_TEST]: owner.test }
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: childMeta(recipe, copy.name, copy.namespace, labels, { [ANNOTATION_SOURCE_SECRET]: sourceSecretAnnotation(copy.sources) }),
    type: 'Opaque',
  }
}

/**
 * The Secret to write: the desired manifest plus `data` from the source values the caller read
 * (`values[source.name][source.key]`, base64 as the API returns it). A missing optional key is
 * omitted; a missing required key is reported in `missing` (a prerequisite failure, spec §7.4).
 */
export function withSecretData(manifest: Manifest, copy: SecretCopy, values: Record<string, Record<string, string> | undefined>): { manifest: Manifest; missing: SecretCopySource[] } {
  const data: Record<string, string> = {}
  const missing: SecretCopySource[] = []
  for (const source of copy.sources) {
    const value = values[source.name]?.[source.key]
    if (value !== undefined) data[source.env] = value
    else if (!source.optional) missing.push(source)
  }
  return { manifest: { ...manifest, data }, missing }
}
