/**
 * The script every console page loads (bundled for the browser by shared/console/assets.ts):
 * refreshes relative times, submits action forms as JSON with the header the action endpoints
 * require, sends the sign-out form the same way, and submits list filters as soon as one
 * changes. Every page works without it except the actions, which need the header.
 */
import { absoluteText, relativeText } from '../time.js'

const REFRESH_MS = 30_000

/** Says something in the page's one aria-live region. */
function announce(text: string): void {
  const region = document.getElementById('announcer')
  if (!region) return
  // Cleared first, so the same message twice is announced twice.
  region.textContent = ''
  window.setTimeout(() => { region.textContent = text }, 50)
}

function refreshTimes(): void {
  const now = Date.now()
  for (const el of Array.from(document.querySelectorAll<HTMLTimeElement>('time.rel[datetime]'))) {
    const at = Date.parse(el.dateTime)
    if (Number.isNaN(at)) continue
    const text = relativeText(at, now)
    if (el.textContent !== text) el.textContent = text
    if (!el.title) el.title = absoluteText(at)
  }
}

/** What run-control (or the console) answered, in words. */
function answerText(status: number, body: unknown, label: string): string {
  const message = body && typeof body === 'object'
    ? ((body as { message?: unknown }).message ?? (body as { error?: unknown }).error)
    : undefined
  if (status >= 200 && status < 300) return `${label}: done${typeof message === 'string' ? `. ${message}` : ''}`
  return `${label} failed (${status})${typeof message === 'string' ? `: ${message}` : ''}`
}

async function submitAction(form: HTMLFormElement, button: HTMLButtonElement | null): Promise<void> {
  const label = button?.textContent?.trim() || 'Action'
  const question = form.dataset.confirm
  if (question && !window.confirm(question)) return
  const payload: Record<string, unknown> = {}
  const reason = form.querySelector<HTMLInputElement>('input[name="reason"]')?.value.trim()
  if (reason) payload.reason = reason
  const inputs = Array.from(form.querySelectorAll<HTMLInputElement>('input[data-parameter]'))
  if (inputs.length > 0) payload.parameters = Object.fromEntries(inputs.map((i) => [i.dataset.parameter ?? '', i.value]))
  if (form.dataset.extra) Object.assign(payload, JSON.parse(form.dataset.extra) as Record<string, string>)
  const result = form.querySelector<HTMLElement>('.action-result')
  if (button) button.disabled = true
  let text: string
  let ok = false
  let status = 0
  let body: unknown
  try {
    const response = await fetch(form.action, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-Kinetic-Console': '1' },
      body: JSON.stringify(payload),
    })
    status = response.status
    body = await response.json().catch(() => undefined)
    ok = response.ok
    text = answerText(status, body, label)
  } catch {
    text = `${label} failed: the console could not be reached`
  }
  if (button) button.disabled = false
  if (result) {
    result.textContent = text
    result.classList.toggle('error', !ok)
  }
  announce(text)
  const event = new CustomEvent('kinetic:action', { cancelable: true, detail: { ok, status, body, path: form.getAttribute('action') } })
  const handled = !document.dispatchEvent(event)
  // A page that updates itself (the live run page) cancels the event; the others reload.
  if (ok && !handled) window.setTimeout(() => window.location.reload(), 600)
}

async function signOut(form: HTMLFormElement): Promise<void> {
  try {
    const response = await fetch(form.action, { method: 'POST', credentials: 'same-origin', headers: { 'X-Kinetic-Console': '1' } })
    window.location.assign(response.redirected ? response.url : '/signin')
  } catch {
    announce('Signing out failed: the console could not be reached')
  }
}

function start(): void {
  for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>('form[data-action-form] button[data-needs-script]'))) button.disabled = false
  document.addEventListener('submit', (event) => {
    const form = event.target
    if (!(form instanceof HTMLFormElement)) return
    if (form.hasAttribute('data-action-form')) {
      event.preventDefault()
      const submitter = (event as SubmitEvent).submitter
      void submitAction(form, submitter instanceof HTMLButtonElement ? submitter : form.querySelector('button'))
    } else if (form.hasAttribute('data-signout')) {
      event.preventDefault()
      void signOut(form)
    }
  })
  // Filters are plain GET forms; with the script a changed select applies at once.
  document.addEventListener('change', (event) => {
    const field = event.target
    if (!(field instanceof HTMLSelectElement)) return
    const form = field.form
    if (form?.classList.contains('filters')) form.requestSubmit()
  })
  refreshTimes()
  window.setInterval(refreshTimes, REFRESH_MS)
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start)
else start()
