/** What the standard `OTEL_*` variables ask of Kinetic's tracing. */
export interface TelemetryConfig {
  /** Off unless an OTLP endpoint is configured (and the SDK and traces exporter are not disabled). */
  enabled: boolean
  /**
   * Prompts, responses and tool arguments on GenAI spans: only when
   * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, as the GenAI conventions advise.
   */
  captureContent: boolean
}

/** Pure: the tracing configuration of an environment. */
export function telemetryConfigFrom(env: Readonly<Record<string, string | undefined>>): TelemetryConfig {
  const endpoint = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim()
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true'
  const exporters = (env.OTEL_TRACES_EXPORTER ?? 'otlp').split(',').map((e) => e.trim().toLowerCase())
  return {
    enabled: endpoint !== '' && !disabled && !exporters.includes('none'),
    captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim().toLowerCase() === 'true',
  }
}

/**
 * Pure: the `OTEL_*` variables a step Job inherits from the function that creates it, so the
 * executor exports to the same collector. Not the service name (the executor has its own) and
 * never `*_HEADERS`, which may hold a token: a Job spec is readable by whoever can read Jobs.
 */
export function otelEnvForSteps(env: Readonly<Record<string, string | undefined>>): Array<{ name: string; value: string }> {
  return Object.keys(env)
    .filter((k) => k.startsWith('OTEL_') && k !== 'OTEL_SERVICE_NAME' && !k.endsWith('_HEADERS') && env[k] !== undefined && env[k] !== '')
    .sort()
    .map((name) => ({ name, value: env[name] as string }))
}
