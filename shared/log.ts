import { pino, type Logger } from 'pino'

export type { Logger }

/** JSON lines on stdout, one logger per process; `function` names the emitter in every line. */
export function createLogger(fn: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { function: fn },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // Secrets travel only by reference, but redact the usual carriers in case a caller slips.
    redact: { paths: ['*.apiKey', '*.token', '*.authorization', '*.MODEL_API_KEY'], censor: '[redacted]' },
  })
}

/** A logger that writes nothing, for tests. */
export const silentLogger: Logger = pino({ level: 'silent' })
