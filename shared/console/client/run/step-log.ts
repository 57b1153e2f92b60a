import { RECONNECT_MS, setText } from './page.js'

/**
 * Following a step's log on the run page (for ../run.ts): lines appended as they come, at most
 * once a frame, the stream reopened after the last line shown when it drops or the tab is shown
 * again, until the log ends.
 */

/** Follows the log of a `.log-panel`; returns how to stop. */
export function followLog(panel: HTMLElement): () => void {
  const url = panel.dataset.logLive
  const pre = panel.querySelector<HTMLElement>('[data-log]')
  const follow = panel.querySelector<HTMLInputElement>('[data-log-follow]')
  const status = panel.querySelector<HTMLElement>('[data-log-status]')
  if (!url || !pre) return () => {}
  let source: EventSource | undefined
  let ended = false
  let pending: string[] = []
  let frame = 0
  // The id of the last line shown: a reopened stream starts after it (live.ts logEventsResponse).
  let lastId = ''
  let retry = 0
  const flush = () => {
    frame = 0
    if (pending.length === 0) return
    pre.append(document.createTextNode(pending.join('')))
    pending = []
    if (follow?.checked) pre.scrollTop = pre.scrollHeight
  }
  const finish = (text: string) => {
    ended = true
    window.clearTimeout(retry)
    source?.close()
    source = undefined
    flush()
    setText(status, text)
  }
  const open = () => {
    if (ended || source) return
    const target = new URL(url, window.location.href)
    if (lastId) target.searchParams.set('after', lastId)
    source = new EventSource(target.toString())
    source.addEventListener('reset', () => {
      pending = []
      pre.textContent = ''
      setText(status, 'Following the log.')
    })
    source.addEventListener('line', (e) => {
      const message = e as MessageEvent<string>
      if (message.lastEventId) lastId = message.lastEventId
      // A line's text may have been split over several data fields; they come back joined by \n.
      pending.push(`${message.data}\n`)
      if (!frame) frame = window.requestAnimationFrame(flush)
      setText(status, 'Following the log.')
    })
    source.addEventListener('gap', (e) => {
      pending.push(`\u2026 ${(JSON.parse((e as MessageEvent<string>).data) as { message: string }).message}\n`)
      if (!frame) frame = window.requestAnimationFrame(flush)
    })
    for (const name of ['end', 'truncated'] as const) {
      source.addEventListener(name, (e) => finish((JSON.parse((e as MessageEvent<string>).data) as { message: string }).message))
    }
    source.addEventListener('error', (e) => {
      const data = (e as MessageEvent<string>).data
      if (typeof data === 'string' && data !== '') {
        finish((JSON.parse(data) as { message?: string }).message ?? 'The log stream stopped.')
        return
      }
      // The connection dropped: reopen after the last line shown (EventSource's own retry would
      // give up on an error status, and cannot say where the page is), until the log ends.
      close()
      setText(status, 'Reconnecting to the log\u2026')
      window.clearTimeout(retry)
      retry = window.setTimeout(open, RECONNECT_MS)
    })
  }
  const close = () => {
    source?.close()
    source = undefined
  }
  // A hidden tab keeps no connection open; showing it again resumes after the last line shown.
  const onVisibility = () => {
    if (!document.hidden) return open()
    window.clearTimeout(retry)
    close()
  }
  document.addEventListener('visibilitychange', onVisibility)
  follow?.addEventListener('change', () => { if (follow.checked) pre.scrollTop = pre.scrollHeight })
  if (!document.hidden) open()
  return () => {
    document.removeEventListener('visibilitychange', onVisibility)
    ended = true
    window.clearTimeout(retry)
    close()
  }
}
