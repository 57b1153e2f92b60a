import { createHash } from 'node:crypto'

// The alphabet Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789'

/**
 * Pure: the name of the pod for one attempt of a Job: `<job>-<5 chars>`, the suffix derived
 * from the Job's uid and the attempt number so a restart of the runner finds the same pod.
 * The Job name part is clamped so the whole stays within 63 characters.
 */
export function podNameFor(jobName: string, jobUid: string, attempt: number): string {
  const digest = createHash('sha256').update(`${jobUid}/${attempt}`).digest()
  let suffix = ''
  for (let i = 0; i < 5; i++) suffix += ALPHABET[(digest[i] as number) % ALPHABET.length]
  return `${jobName.slice(0, 57)}-${suffix}`
}
