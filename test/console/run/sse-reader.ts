// Reads a Server-Sent Events body in tests as a browser's EventSource would parse it.

/** One event as EventSource dispatches it. */
export interface SseEvent { event: string; data: string; id?: string }

/** Reads an SSE body as it arrives: the parsed events, the comments, and whether it ended. */
export class SseReader {
  events: SseEvent[] = []
  comments: string[] = []
  retry?: number
  ended = false
  private buffer = ''

  constructor(response: Response) {
    void this.read(response.body!.getReader())
  }

  private async read(reader: ReadableStreamDefaultReader<Uint8Array>) {
    const decoder = new TextDecoder()
    for (;;) {
      // A reader aborted by the test ends the stream as a closed connection would.
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true as const }))
      if (done) break
      this.buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = this.buffer.indexOf('\n\n')) >= 0) {
        const block = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 2)
        const message: SseEvent = { event: 'message', data: '' }
        const data: string[] = []
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) this.comments.push(line.slice(1).trim())
          else if (line.startsWith('retry: ')) this.retry = Number(line.slice(7))
          else if (line.startsWith('event: ')) message.event = line.slice(7)
          else if (line.startsWith('data: ')) data.push(line.slice(6))
          else if (line.startsWith('id: ')) message.id = line.slice(4)
        }
        if (data.length > 0) this.events.push({ ...message, data: data.join('\n') })
      }
    }
    this.ended = true
  }

  named(event: string): SseEvent[] {
    return this.events.filter((e) => e.event === event)
  }

  json<T = Record<string, unknown>>(event: string): T[] {
    return this.named(event).map((e) => JSON.parse(e.data) as T)
  }
}
