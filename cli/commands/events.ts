import type { CoreV1Event } from '@kubernetes/client-node'
import { stringify } from 'yaml'
import { has, type ParsedArgs } from '../args.js'
import { cloudEventOf, type StructuredCloudEvent } from '../../shared/engine/cloud-event-of.js'
import type { Command, Session } from '../command.js'
import { pause } from '../io.js'
import { table } from '../output.js'
import { requireWorkflow } from '../workflows.js'

/**
 * Pure: Events oldest first. One reconcile records all its transitions with the same timestamp,
 * so ties keep the order they were created in (resourceVersion, when the server's are numbers).
 */
export function inRecordedOrder(events: readonly CoreV1Event[]): CoreV1Event[] {
  const time = (e: CoreV1Event) => new Date(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp ?? 0).getTime()
  const rv = (e: CoreV1Event) => Number(e.metadata?.resourceVersion ?? Number.NaN)
  return [...events].sort((a, b) => {
    const byTime = time(a) - time(b)
    if (byTime !== 0 && !Number.isNaN(byTime)) return byTime
    const byRv = rv(a) - rv(b)
    return Number.isNaN(byRv) ? 0 : byRv
  })
}

async function read(session: Session, name: string): Promise<StructuredCloudEvent[]> {
  const namespace = session.namespace
  const events = await session.call({ verb: 'list', resource: 'events', namespace }, (kube) => kube.listEvents(namespace, { kind: 'Workflow', name }))
  return inRecordedOrder(events).map(cloudEventOf)
}

function print(session: Session, events: readonly StructuredCloudEvent[], header: boolean): void {
  if (events.length === 0) return
  if (session.format === 'json') {
    session.out(events.map((e) => `${JSON.stringify(e)}\n`).join(''))
  } else if (session.format === 'yaml') {
    session.out(events.map((e) => `---\n${stringify(e)}`).join(''))
  } else {
    const rows = events.map((e) => [e.time ?? '', e.type, e.id.slice(0, 12), String(e.data.message ?? '')])
    const text = table(['TIME', 'TYPE', 'ID', 'MESSAGE'], rows)
    session.out(header ? text : text.slice(text.indexOf('\n') + 1))
  }
}

/** Prints a Workflow's Events as CloudEvents; with `follow`, keeps printing new ones until Ctrl-C. */
export async function showEvents(session: Session, name: string, follow: boolean): Promise<number> {
  await requireWorkflow(session, name)
  const seen = new Set<string>()
  const key = (e: StructuredCloudEvent) => `${e.id}|${e.time ?? ''}|${String(e.data.count ?? 1)}`
  let first = true
  for (;;) {
    const fresh = (await read(session, name)).filter((e) => !seen.has(key(e)))
    for (const e of fresh) seen.add(key(e))
    // The table's columns are sized per batch; the header is printed once.
    print(session, fresh, first)
    if (first && fresh.length === 0 && !follow && session.format === 'table') session.warn(`no events for workflow ${name} in namespace ${session.namespace}`)
    if (fresh.length > 0) first = false
    if (!follow) return 0
    if (await pause(session.io.pollMs, session.io.signal)) return 0
  }
}

export const eventsCommand: Command = {
  name: 'events',
  args: '<workflow>',
  arity: [1, 1],
  summary: 'Show Kinetic\'s CloudEvents for a Workflow',
  description: 'Kinetic publishes every transition of a run (started, step waiting, step failed, finished, ...) as a '
    + 'dev.kinetic.workflow.<kind> CloudEvent, and records those a person may act on as Kubernetes Events carrying the '
    + 'CloudEvent\'s type and id. This lists them as CloudEvents: a table by default, one structured-mode CloudEvent JSON per '
    + 'line with -o json (specversion, id, type, source, subject, time, data). -f keeps printing new ones until Ctrl-C.',
  flags: [{ name: 'follow', short: 'f', description: 'keep printing new events until Ctrl-C' }],
  examples: ['kinetic events incident-42', 'kinetic events incident-42 -o json | jq .type'],
  run: (session: Session, args: ParsedArgs) => showEvents(session, args.positionals[0]!, has(args, 'follow')),
}
