import type { ResourceType } from '../resource-type.js'
import type { KubeObject } from '../types.js'

const TERMINAL_POD_PHASES = new Set(['Succeeded', 'Failed'])

/** Whether a resource is the core Pod, whose objects have logs. */
export function isPodResource(rt: ResourceType): boolean {
  return rt.kind === 'Pod' && rt.group === ''
}

/** Whether a pod has finished (Succeeded or Failed), so its log will not grow. */
export function isTerminalPod(pod: KubeObject): boolean {
  return TERMINAL_POD_PHASES.has(String((pod.status as Record<string, unknown> | undefined)?.phase))
}

/**
 * Pods' logs (what `GET .../pods/<name>/log` serves), keyed `namespace/pod`, and the followers
 * of each (`kubectl logs -f`). The store checks that the pod exists; this only keeps the text.
 */
export class PodLogs {
  private readonly texts = new Map<string, string>()
  private readonly followers = new Map<string, Set<(chunk: string | null) => void>>()

  /** Appends text to a pod's log and hands it to the pod's followers. */
  append(namespace: string, pod: string, text: string): void {
    const key = `${namespace}/${pod}`
    this.texts.set(key, (this.texts.get(key) ?? '') + text)
    for (const follower of this.followers.get(key) ?? []) follower(text)
  }

  /** A pod's log, optionally only the last `tailLines` lines. */
  read(namespace: string, pod: string, tailLines: number | undefined): string {
    const text = this.texts.get(`${namespace}/${pod}`) ?? ''
    if (tailLines === undefined) return text
    if (tailLines <= 0) return ''
    const lines = text.split('\n')
    const trailing = lines[lines.length - 1] === ''
    if (trailing) lines.pop()
    return lines.slice(-tailLines).join('\n') + (trailing ? '\n' : '')
  }

  /** Adds a follower of a running pod's log; returns the function that removes it. */
  follow(namespace: string, pod: string, onChunk: (chunk: string | null) => void): () => void {
    const key = `${namespace}/${pod}`
    let set = this.followers.get(key)
    if (!set) this.followers.set(key, (set = new Set()))
    set.add(onChunk)
    return () => {
      set.delete(onChunk)
      if (set.size === 0) this.followers.delete(key)
    }
  }

  /** The pod has finished: its followers get null and are dropped. */
  end(namespace: string, pod: string): void {
    const key = `${namespace}/${pod}`
    const set = this.followers.get(key)
    if (!set) return
    this.followers.delete(key)
    for (const follower of set) follower(null)
  }

  /** The pod is gone: its log is dropped and its followers ended. */
  drop(namespace: string, pod: string): void {
    this.texts.delete(`${namespace}/${pod}`)
    this.end(namespace, pod)
  }
}
