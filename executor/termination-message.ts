import { existsSync, writeFileSync } from 'node:fs'

/** Bytes of a container's termination message the kubelet keeps (the rest is cut off). */
export const TERMINATION_MESSAGE_LIMIT = 4096

/** Where the kubelet reads a container's termination message unless the pod spec says otherwise. */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log'

/**
 * Also leaves the OUTPUT line as the container's termination message, when it fits: the kubelet
 * copies it into the pod's status, so the engine finds the result in the pod it lists anyway and
 * skips reading the log. The log keeps the line regardless, so a message that is missing (too
 * long, no file, a custom executor image) costs only that one extra read.
 */
export function leaveTerminationMessage(line: string, env: NodeJS.ProcessEnv = process.env): void {
  if (Buffer.byteLength(line) > TERMINATION_MESSAGE_LIMIT) return
  // The local pod runner cannot mount a file at the kubelet's path, so it names one instead.
  const path = env.KINETIC_TERMINATION_MESSAGE_PATH || DEFAULT_TERMINATION_MESSAGE_PATH
  try {
    // The kubelet creates the file before the container starts; where nothing did, there is no reader.
    if (existsSync(path)) writeFileSync(path, line)
  } catch {
    // Not writable (e.g. a read-only root without the kubelet's mount): the log has the line.
  }
}
