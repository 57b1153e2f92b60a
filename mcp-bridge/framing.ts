/**
 * MCP's stdio framing: one JSON-RPC message per line, `\n`-terminated (a `\r` before it is
 * dropped). Lines longer than the limit are discarded whole instead of growing a buffer
 * without bound; the caller is told how many bytes it lost.
 */
export class LineReader {
  private parts: Buffer[] = []
  private size = 0
  private discarding = false

  constructor(private readonly maxLineBytes: number) {}

  /** Feeds a chunk; returns the complete lines it finished and the size of any line it dropped. */
  push(chunk: Buffer): { lines: string[]; dropped: number[] } {
    const lines: string[] = []
    const dropped: number[] = []
    let start = 0
    for (;;) {
      const nl = chunk.indexOf(0x0a, start)
      const piece = chunk.subarray(start, nl === -1 ? chunk.length : nl)
      if (!this.discarding) {
        if (this.size + piece.length > this.maxLineBytes) {
          this.discarding = true
          this.parts = []
        } else if (piece.length > 0) {
          this.parts.push(piece)
        }
      }
      this.size += piece.length
      if (nl === -1) break
      if (this.discarding) dropped.push(this.size)
      else {
        let line = Buffer.concat(this.parts).toString('utf8')
        if (line.endsWith('\r')) line = line.slice(0, -1)
        if (line.trim() !== '') lines.push(line)
      }
      this.parts = []
      this.size = 0
      this.discarding = false
      start = nl + 1
    }
    return { lines, dropped }
  }
}
