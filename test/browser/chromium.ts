import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

/** KINETIC_REQUIRE_BROWSER=1 (set by .ci/run): a missing browser fails the run instead of skipping. */
export const REQUIRE_BROWSER = process.env.KINETIC_REQUIRE_BROWSER === '1'

/** Where the browser tier finds Chromium, or why it cannot. */
export type ChromiumLookup = { available: true; path: string } | { available: false; reason: string }

/** KINETIC_CHROMIUM, else `chromium` on PATH (Debian's package); nothing is downloaded. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): ChromiumLookup {
  const configured = env.KINETIC_CHROMIUM
  if (configured) {
    return existsSync(configured) ? { available: true, path: configured } : { available: false, reason: `KINETIC_CHROMIUM=${configured} does not exist` }
  }
  try {
    const path = execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim()
    if (path) return { available: true, path }
  } catch {
    // not on PATH
  }
  return { available: false, reason: 'no chromium on PATH (apt-get install chromium, or set KINETIC_CHROMIUM to a Chromium binary; KINETIC_REQUIRE_BROWSER=1 makes this a failure)' }
}

/** Headless Chromium; the sandbox is off only as root, where Chromium refuses to start with it. */
export function launchChromium(path: string): Promise<Browser> {
  const root = typeof process.getuid === 'function' && process.getuid() === 0
  return chromium.launch({ executablePath: path, headless: true, args: root ? ['--no-sandbox'] : [] })
}
