// spec §7.9 revisions and rollback from snapshots: R re-applied exactly from its snapshot,
// the failed revision's extra children pruned in reverse order, completed Jobs not re-run,
// snapshot history trimming and the rollback annotation's guard.
import { describe, expect, it } from 'vitest'
import { inventoryOf } from '../../shared/recipe/plan/deploy-plan.js'
import { checkRollbackTarget, parseSnapshot, planRollback, rolledBackMessage, snapshotObjects, snapshotsToDelete, trimRevisionEntries } from '../../shared/recipe/plan/rollback.js'
import { applied, keyOf, liveWith, RECIPE, ready, revisionOf, snapshotOf } from './deploy-plan-fixtures.js'

const UID = RECIPE.uid

describe('snapshot objects (spec §7.9)', () => {
  it('rebuilds every child of the revision exactly as buildManifests made it (copied Secrets from their SecretCopy entry)', () => {
    const names = ['db', 'web', 'tools', 'batch', 'cron', 'agent', 'clock']
    const built = revisionOf(names, 4, {}, true)
    const rebuilt = snapshotObjects(snapshotOf(names, 4, {}, true))
    expect(rebuilt.children.map((c) => [keyOf(c), c.digest, c.component, c.order])).toEqual(built.children.map((c) => [keyOf(c), c.digest, c.component, c.order]))
    expect(rebuilt.children.map((c) => c.manifest)).toEqual(built.children.map((c) => c.manifest))
    expect(rebuilt.workloads.map((w) => [w.name, w.kind, w.transport, w.objectName, w.serviceName])).toEqual(built.workloads.map((w) => [w.name, w.kind, w.transport, w.objectName, w.serviceName]))
    expect(inventoryOf(rebuilt)).toEqual(inventoryOf(built))
  })

  it('applies R strictly in its recorded order (the snapshot has no dependsOn)', () => {
    const rebuilt = snapshotObjects(snapshotOf(['db', 'agent', 'web'], 1))
    expect(rebuilt.workloads.map((w) => [w.name, w.dependsOn])).toEqual([['db', []], ['agent', ['db']], ['web', ['db', 'agent']]])
  })

  it('a damaged snapshot is reported, not guessed at', () => {
    expect(parseSnapshot({ metadata: { name: 'shop-rev-3', labels: { 'purko.io/revision': '3' } }, data: { 'manifests.json': '{' } })).toMatchObject({ ok: false })
    expect(parseSnapshot({ metadata: { name: 'other' }, data: {} })).toEqual({ ok: false, message: 'ConfigMap other is not a revision snapshot' })
  })
})

describe('planRollback (spec §7.9)', () => {
  const good = snapshotOf(['db', 'web', 'batch'], 2)
  const failed = snapshotOf(['db', 'web', 'tools'], 3, { web: '2' })

  it('re-applies the changed children of R, then prunes what R does not have in reverse order once R is Ready', () => {
    const live = liveWith(snapshotObjects(failed).children)
    const first = planRollback({ uid: UID, target: good, from: [failed], live, readiness: {} })
    expect(first.writes).toEqual([])
    expect(first.workloads.find((w) => w.name === 'web')).toMatchObject({ phase: 'Waiting', waitingFor: ['db'] })
    const second = planRollback({ uid: UID, target: good, from: [failed], live, readiness: ready('db') })
    expect(second.writes.map((w) => w.message)).toEqual(['updated Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de'])
    expect(second.prune).toEqual([])
    expect(second.pruneBlockedBy).toBe('waiting for workload "web" to be ready')
    const job = snapshotObjects(good).children.find((c) => c.kind === 'Job')!
    live.set(keyOf(snapshotObjects(good).workloads[1]!.children[2]!), applied(snapshotObjects(good).workloads[1]!.children[2]!))
    const third = planRollback({ uid: UID, target: good, from: [failed], live, readiness: ready('db', 'web') })
    expect(third.writes.map((w) => w.message)).toEqual([`created Job sandbox-recipes/${job.name}`])
    live.set(keyOf(job), applied(job))
    const fourth = planRollback({ uid: UID, target: good, from: [failed], live, readiness: ready('db', 'web', 'batch') })
    expect(fourth.prune.map((d) => d.key)).toEqual(['MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae', 'Deployment mcp-server/recipes-demo-shop-tools-fa0caeae', 'Service mcp-server/recipes-demo-shop-tools-fa0caeae'])
  })

  it('does not run a completed Job again, prunes the failed revision\'s extra workload, and never its PVCs', () => {
    const job = snapshotObjects(good).children.find((c) => c.kind === 'Job')!
    const target = { ...good, completedJobs: [job.name] }
    const live = liveWith(snapshotObjects(good).workloads.filter((w) => w.name !== 'batch').flatMap((w) => w.children), snapshotObjects(failed).workloads[2]!.children)
    const plan = planRollback({ uid: UID, target, from: [failed, good], live, readiness: ready('db', 'web', 'batch') })
    expect(plan.writes).toEqual([])
    expect(plan.prune.map((d) => d.key)).toEqual(['MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae', 'Deployment mcp-server/recipes-demo-shop-tools-fa0caeae', 'Service mcp-server/recipes-demo-shop-tools-fa0caeae'])
    expect(plan.prune.some((d) => d.kind === 'PersistentVolumeClaim')).toBe(false)
  })

  it('never writes tests or the child Workflow of R', () => {
    const withTests = snapshotOf(['web'], 5, {}, true)
    const plan = planRollback({ uid: UID, target: withTests, from: [], live: new Map(), readiness: ready('web') })
    expect(plan.writes.map((w) => w.child.component)).toEqual(['secret', 'service', 'workload'])
  })
})

describe('history (spec §7.9)', () => {
  it.each([
    ['keeps the newest limit', [1, 2, 3, 4, 5, 6, 7], 5, 7, 7, [1, 2]],
    ['always keeps current and last good', [1, 2, 3, 4, 5, 6, 7], 2, 3, 1, [2, 4, 5]],
    ['nothing beyond the limit', [4, 5], 5, 5, 4, []],
  ] as const)('%s', (_label, existing, limit, current, lastGood, expected) => {
    expect(snapshotsToDelete(existing, limit, current, lastGood)).toEqual(expected)
  })

  it('status.revisions[] keeps the newest 20, oldest first', () => {
    const entries = Array.from({ length: 25 }, (_, i) => ({ revision: 25 - i }))
    expect(trimRevisionEntries(entries).map((e) => e.revision)).toEqual(Array.from({ length: 20 }, (_, i) => i + 6))
  })
})

describe('the rollback annotation (spec §7.2)', () => {
  const revisions = [{ revision: 1, state: 'Superseded' }, { revision: 2, state: 'Failed' }, { revision: 3, state: 'Active' }]
  it.each([
    ['a Superseded revision with its snapshot', '1', [1, 2, 3], { ok: true, revision: 1 }],
    ['the active one', '3', [1, 2, 3], { ok: true, revision: 3 }],
    ['a revision that failed', '2', [1, 2, 3], { ok: false, reason: 'RollbackIgnored', message: 'revision 2 never reached Active' }],
    ['a trimmed snapshot', '1', [2, 3], { ok: false, reason: 'RollbackIgnored', message: 'the snapshot of revision 1 no longer exists' }],
    ['not a number', 'latest', [1, 2, 3], { ok: false, reason: 'RollbackIgnored', message: 'purko.io/rollback "latest" is not a revision number' }],
  ] as const)('%s', (_label, value, snapshots, expected) => {
    expect(checkRollbackTarget(value, revisions, snapshots, 3)).toEqual(expected)
  })

  it('the RolledBack message', () => {
    expect(rolledBackMessage(4, 7, 'ReadinessTimeout', 3)).toBe('revision 4 (generation 7) failed: ReadinessTimeout; running revision 3')
  })
})
