/**
 * Names of a recipe's children (spec §5.2). Pure: no clock, no I/O.
 *
 * `shorten(name, limit)`: a name that does not start with a letter first gets the prefix `r`;
 * then it is returned unchanged when it fits, else as its first `limit - 9` characters (trailing
 * `-` removed) + `-` + the first 8 hex digits of SHA-256 of the full (prefixed) name.
 * `base(w)` = `shorten(<recipe-namespace>-<recipe>-<workload>, 43)-<identity>`; every other name
 * derives from it or is shortened to its own limit, so each one is a valid DNS-1123 label.
 *
 * **Deviation from the original design (spec §5.2, issue 27):** the design's `<ns>-<recipe>-<workload>` is not
 * one-to-one: recipe `a-web` of namespace `team` and recipe `web` of `team-a` get the same
 * names in the shared target namespaces, so one of them waits on a NameConflict for good. Names
 * made from a recipe's namespace and name therefore end in `<identity>`, the first 8 hex of
 * SHA-256 of `<ns>/<recipe>/<workload or test>` (`/` occurs in none of them), so different
 * recipes never share a name unless SHA-256's first 32 bits collide.
 */
import { sha256Hex } from '../../core/sha256.js'

/** Length `base(w)` is shortened to, so `-<h8>` suffixes and StatefulSet/CronJob limits fit. */
export const BASE_NAME_LIMIT = 52
/** Limit of a DNS-1123 label (Jobs, Services, test Jobs, the child Workflow). */
export const LABEL_NAME_LIMIT = 63
/** Limit of a DNS-1123 subdomain (ConfigMaps, Secrets). */
export const SUBDOMAIN_NAME_LIMIT = 253

/** First 8 hex digits of SHA-256 of `text` (the content-hash suffix of spec §5.2). */
export function hash8(text: string): string {
  return sha256Hex(text).slice(0, 8)
}

/** spec §5.2 `shorten`: the `r` prefix rule, then the length rule with a SHA-256 suffix. */
export function shorten(name: string, limit: number): string {
  const full = /^[a-z]/i.test(name) ? name : `r${name}`
  if (full.length <= limit) return full
  const head = full.slice(0, Math.max(0, limit - 9)).replace(/-+$/, '')
  return `${head}-${hash8(full)}`
}

/** The 8 hex that tell apart recipes whose joined names read the same (see the deviation above). */
export function identityHash(recipeNamespace: string, recipe: string, member: string): string {
  return hash8(`${recipeNamespace}/${recipe}/${member}`)
}

/** `base(w)` = `shorten(<recipe-namespace>-<recipe>-<workload>, 43)-<identity>`: 52 at most. */
export function baseName(recipeNamespace: string, recipe: string, workload: string): string {
  return `${shorten(`${recipeNamespace}-${recipe}-${workload}`, BASE_NAME_LIMIT - 9)}-${identityHash(recipeNamespace, recipe, workload)}`
}

/** Alias of {@link baseName} with the spec's spelling. */
export const base = baseName

/** Job workload: `base(w)-<h8>`, `<h8>` over the canonical rendered Job spec (JSON text). */
export function jobWorkloadName(baseOfWorkload: string, canonicalJobSpec: string): string {
  return `${baseOfWorkload}-${hash8(canonicalJobSpec)}`
}

/** Service of a workload (and a StatefulSet's `serviceName`): `base(w)`. */
export function serviceName(baseOfWorkload: string): string {
  return baseOfWorkload
}

/** MCPServer of a workload: `base(w)`. */
export function mcpServerName(baseOfWorkload: string): string {
  return baseOfWorkload
}

/** Copied env Secret of a workload: `base(w)-env`. */
export function envSecretName(baseOfWorkload: string): string {
  return `${baseOfWorkload}-env`
}

/** Copied MCP token Secret of a workload: `base(w)-mcp-token`. */
export function mcpTokenSecretName(baseOfWorkload: string): string {
  return `${baseOfWorkload}-mcp-token`
}

/** Test Job: `shorten(<recipe-namespace>-<recipe>-test-<test>-<identity>-r<revision>, 63)`. */
export function testJobName(recipeNamespace: string, recipe: string, test: string, revision: number): string {
  return shorten(`${recipeNamespace}-${recipe}-test-${test}-${identityHash(recipeNamespace, recipe, `test/${test}`)}-r${revision}`, LABEL_NAME_LIMIT)
}

/** Copied env Secret of a test: `shorten(<recipe-namespace>-<recipe>-test-<test>, 43)-<identity>-env` (spec §5.8). */
export function testEnvSecretName(recipeNamespace: string, recipe: string, test: string): string {
  return `${shorten(`${recipeNamespace}-${recipe}-test-${test}`, BASE_NAME_LIMIT - 9)}-${identityHash(recipeNamespace, recipe, `test/${test}`)}-env`
}

/** Child Workflow: `shorten(<recipe>-wf-<h8>, 63)`, `<h8>` over the canonical rendered Workflow spec. */
export function childWorkflowName(recipe: string, canonicalWorkflowSpec: string): string {
  return shorten(`${recipe}-wf-${hash8(canonicalWorkflowSpec)}`, LABEL_NAME_LIMIT)
}

/** Revision snapshot ConfigMap: `<recipe>-rev-<revision>`. */
export function revisionConfigMapName(recipe: string, revision: number): string {
  return shorten(`${recipe}-rev-${revision}`, SUBDOMAIN_NAME_LIMIT)
}

/** DNS-1123 label check (every child name above satisfies it). */
export function isDnsLabel(name: string): boolean {
  return name.length >= 1 && name.length <= LABEL_NAME_LIMIT && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)
}
