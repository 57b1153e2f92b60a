/**
 * HTML built from tagged templates: every interpolated value is escaped unless it is already
 * Html, so a Workflow name, a step error or a log line can never become markup. Pure.
 */

/** Markup that is safe to insert as it is. */
export interface Html {
  readonly html: string
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Pure: text as HTML text or attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c)
}

function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && typeof (value as { html?: unknown }).html === 'string' && Object.keys(value).length === 1
}

function part(value: unknown): string {
  if (value === undefined || value === null || value === false) return ''
  if (Array.isArray(value)) return value.map(part).join('')
  if (isHtml(value)) return value.html
  return escapeHtml(String(value))
}

/** Pure: markup from a template; values are escaped (arrays joined, null/undefined/false omitted). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) out += part(values[i]) + (strings[i + 1] ?? '')
  return { html: out }
}

/** Markup we wrote ourselves (never user data). */
export function trusted(markup: string): Html {
  return { html: markup }
}

/** Pure: several fragments as one. */
export function join(parts: readonly Html[], separator = ''): Html {
  return { html: parts.map((p) => p.html).join(separator) }
}
