const PATTERN = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/

/**
 * Milliseconds of an ISO-8601 duration as Knative's delivery spec uses it (`PT0.2S`, `PT1M`,
 * `P1DT2H`). Throws on anything else, so a typo in a Trigger fails loudly at load time.
 */
export function parseIsoDuration(text: string): number {
  const m = PATTERN.exec(text.trim())
  if (!m || text.trim() === 'P' || text.trim().endsWith('T')) throw new Error(`Not an ISO-8601 duration: ${JSON.stringify(text)}`)
  const [, d, h, min, s] = m
  const num = (v: string | undefined) => (v === undefined ? 0 : Number(v))
  return Math.round(((num(d) * 24 + num(h)) * 60 + num(min)) * 60_000 + num(s) * 1000)
}
