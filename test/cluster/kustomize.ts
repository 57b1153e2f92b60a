import type { KubeObject } from '../../local/knative/kube-http.js'
import { renderKustomization as render } from '../../scripts/kustomize.mjs'

/** One object of a rendered kustomization, with the file it came from (relative to the root folder). */
export interface RenderedObject {
  file: string
  object: KubeObject
}

/**
 * The objects `kubectl apply -k <dir>` sends, named relative to `root`: scripts/kustomize.mjs,
 * the renderer the release script uses too, typed as the tests read objects.
 */
export function renderKustomization(dir: string, root: string = dir): RenderedObject[] {
  return render(dir, { root }) as RenderedObject[]
}
