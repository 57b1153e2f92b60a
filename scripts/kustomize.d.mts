// Types for scripts/kustomize.mjs, so TypeScript callers (the tests) are checked against it.

/** A Kubernetes object as a manifest file holds it. */
export type ManifestObject = Record<string, unknown> & {
  apiVersion?: string
  kind?: string
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
}

/** One object of a rendered kustomization, with the file it came from (relative to the root folder). */
export interface RenderedObject {
  file: string
  object: ManifestObject
}

/** One `images:` entry of a kustomization. */
export interface ImageRule {
  name: string
  newName?: string
  newTag?: string
  digest?: string
}

/** Parses a multi-document YAML file; throws on any YAML error. */
export declare function parseDocuments(text: string, file: string): ManifestObject[]

/**
 * The objects `kubectl apply -k <dir>` sends (resources, then images, then replacements);
 * `images` replaces the top kustomization's entries of the same name, as `kustomize edit set image` would.
 */
export declare function renderKustomization(dir: string, options?: { root?: string; images?: ImageRule[] }): RenderedObject[]
