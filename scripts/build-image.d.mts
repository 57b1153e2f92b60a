// Types for scripts/build-image.mjs, so TypeScript callers (the tests) are checked against it.
import type { AppLayer, ImageConfig } from './image-layer.mjs'
import type { ImageManifest } from './registry-client.mjs'

/** Options of buildImage; `user`/`password` default to REGISTRY_USER/REGISTRY_PASSWORD. */
export interface BuildImageOptions {
  base: string
  to: string
  dist?: string
  platform?: string
  insecure?: boolean
  tls?: boolean
  ca?: string
  withSourcemaps?: boolean
  user?: string
  password?: string
  fetch?: typeof globalThis.fetch
  log?: (line: string) => void
}

/** What buildImage pushed. */
export interface BuildImageResult {
  reference: string
  name: string
  digest: string
  manifest: ImageManifest
  config: ImageConfig
  layer: AppLayer
}

/** Builds and pushes the image. */
export declare function buildImage(options: BuildImageOptions): Promise<BuildImageResult>
/** Points the `kinetic` image entry of `<dir>/kustomization.yaml` at `name@digest`; returns the file path. */
export declare function setKustomizeImage(dir: string, name: string, digest: string): string
/** Runs the CLI; resolves to the exit code. */
export declare function main(argv: string[]): Promise<number>
