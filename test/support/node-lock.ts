import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * One real node at a time on this machine (a fixed bridge, CIDRs and iptables chains): the node
 * tier and the Knative tier take this lock before startNode and release it after stopNode, so
 * vitest may run their files in parallel workers. The lock is a file holding the holder's pid;
 * one whose process is gone is taken over.
 */
const LOCK = join(tmpdir(), 'kinetic-test-node.lock')

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Waits (polling every second, at most `timeoutMs`) until this process holds the node lock. */
export async function lockNode(timeoutMs = 20 * 60_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      const fd = openSync(LOCK, 'wx')
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return () => rmSync(LOCK, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const holder = Number(readFileSync(LOCK, 'utf8').trim())
    if (!Number.isInteger(holder) || holder <= 0 || !alive(holder)) {
      rmSync(LOCK, { force: true })
      continue
    }
    if (Date.now() > deadline) throw new Error(`another test's node (pid ${holder}) held ${LOCK} for ${Math.round(timeoutMs / 60_000)} minutes`)
    await new Promise((r) => setTimeout(r, 1000))
  }
}
