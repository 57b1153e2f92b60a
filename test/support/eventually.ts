/**
 * Polls `fn` until it gives a value (anything but undefined or false) and resolves with it;
 * throws `Timed out waiting for <what>` after `ms`. For states a test waits on in another
 * process (an API server, a controller, a node), never for timing assertions.
 */
export async function eventually<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 30_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v !== undefined && v !== false) return v
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
