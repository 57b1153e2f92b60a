import { pino, type Logger } from 'pino'

/** Where log lines go; `write` receives one complete JSON line. */
export interface LineSink {
  write(line: string): void
}

/** Pure: the text with every secret value (and its JSON-escaped form) replaced by `[redacted]`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of secrets) {
    if (secret.length < 4) continue
    const escaped = JSON.stringify(secret).slice(1, -1)
    out = out.split(secret).join('[redacted]')
    if (escaped !== secret) out = out.split(escaped).join('[redacted]')
  }
  return out
}

/**
 * A pino JSON logger for the executor. Lines go to `sink` (stderr in production, so stdout
 * carries only the OUTPUT line) and pass through scrubSecrets first: a secret that slips into a
 * message or an error's text is still never written.
 */
export function createExecutorLogger(sink: LineSink, secrets: () => readonly string[], level = 'info'): Logger {
  return pino(
    {
      level,
      base: { function: 'step-executor' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    { write: (line: string) => sink.write(scrubSecrets(line, secrets())) },
  )
}
