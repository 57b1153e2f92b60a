import { StringDecoder } from 'node:string_decoder'
import { Writable } from 'node:stream'
import { ApiException, Log, Watch } from '@kubernetes/client-node'
import { API_GROUP, API_VERSION_NAME } from '../../schemas/labels.js'
import type { Workflow } from '../../schemas/workflow.js'
import type { StreamHandle } from '../port.js'
import { classifyApiError, type KubeApi } from './kube-api.js'
import { workflowFrom } from './workflows.js'

/** The port's long-lived requests: a watch of one Workflow, and a followed pod log. */
export function streamVerbs(api: KubeApi) {
  return {
    async watchWorkflow(namespace: string, name: string, resourceVersion: string, onChange: (workflow: Workflow | null) => void): Promise<StreamHandle> {
      const what = `watch Workflow ${namespace}/${name}`
      const stream = openStream()
      // An ERROR event (410 Gone, mostly) comes in-band; the server closes the watch right after it.
      let failure: Error | undefined
      let controller: AbortController | undefined
      const onEvent = (type: string, object: unknown) => {
        if (stream.settled) return
        try {
          if (type === 'ADDED' || type === 'MODIFIED') onChange(workflowFrom(object, namespace, name))
          else if (type === 'DELETED') onChange(null)
          else if (type === 'ERROR') failure = watchEventError(object, what)
        } catch (err) {
          // Watch swallows what its callback throws: end the stream with it instead.
          failure = err instanceof Error ? err : new Error(String(err))
          controller?.abort()
        }
      }
      controller = await new Watch(api.kubeConfig).watch(
        `/apis/${API_GROUP}/${API_VERSION_NAME}/namespaces/${encodeURIComponent(namespace)}/workflows`,
        { fieldSelector: `metadata.name=${name}`, resourceVersion, allowWatchBookmarks: true },
        onEvent,
        (err: unknown) => stream.end(failure ?? (err ? streamError(err, what) : undefined)),
      )
      return stream.handle(controller)
    },

    async followPodLog(
      namespace: string, pod: string, options: { container?: string; tailLines?: number; limitBytes?: number }, onChunk: (text: string) => void,
    ): Promise<StreamHandle> {
      const what = `follow log of pod ${namespace}/${pod}`
      const stream = openStream()
      // Multi-byte characters may be split across chunks: decode across them.
      const decoder = new StringDecoder('utf8')
      const sink = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          const text = decoder.write(chunk)
          if (text !== '' && !stream.settled) onChunk(text)
          callback()
        },
        final(callback) {
          const rest = decoder.end()
          if (rest !== '' && !stream.settled) onChunk(rest)
          callback()
        },
      })
      sink.on('finish', () => stream.end())
      let controller: AbortController
      try {
        // An empty container name lets the API server pick a single-container pod's container.
        controller = await new Log(api.kubeConfig).log(namespace, pod, options.container ?? '', sink, {
          follow: true,
          ...(options.tailLines !== undefined ? { tailLines: options.tailLines } : {}),
          ...(options.limitBytes !== undefined ? { limitBytes: options.limitBytes } : {}),
        })
      } catch (err) {
        throw classifyApiError(err, `Could not ${what}`)
      }
      return stream.handle(controller)
    },
  }
}

/**
 * The StreamHandle bookkeeping of a watch or a followed log: `done` settles once, `stop()`
 * resolves it at once, and a stream that failed before it was handed out throws instead.
 */
function openStream() {
  let settled = false
  let early: Error | undefined
  let resolve!: () => void
  let reject!: (err: Error) => void
  const done = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  // Nobody may be waiting on `done` when the stream fails; that is not an unhandled rejection.
  done.catch(() => {})
  let handedOut = false
  return {
    get settled() { return settled },
    end(err?: Error) {
      if (settled) return
      settled = true
      if (!handedOut && err) early = err
      if (err) reject(err)
      else resolve()
    },
    handle(controller: AbortController): StreamHandle {
      if (early) throw early
      handedOut = true
      return {
        stop: () => {
          if (!settled) { settled = true; resolve() }
          controller.abort()
        },
        done,
      }
    },
  }
}

/** A failed stream request (Watch reports a non-200 as `statusCode`) as one of our errors. */
function streamError(err: unknown, what: string): Error {
  const statusCode = (err as { statusCode?: unknown }).statusCode
  const cause = typeof statusCode === 'number' ? new ApiException(statusCode, (err as Error).message, undefined, {}) : err
  return classifyApiError(cause, `Could not ${what}`)
}

/** A watch's in-band ERROR event (a Status: 410 Gone when the resourceVersion is too old) as one of our errors. */
function watchEventError(object: unknown, what: string): Error {
  const status = object as { code?: unknown; message?: unknown } | undefined
  const code = typeof status?.code === 'number' ? status.code : 500
  const message = typeof status?.message === 'string' ? status.message : 'watch error'
  return classifyApiError(new ApiException(code, message, status, {}), `Could not ${what}: ${message}`)
}
