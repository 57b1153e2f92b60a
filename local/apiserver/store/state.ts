import type { ResourceRegistry } from '../resource-registry.js'
import type { Ledger } from './ledger.js'
import type { ObjectTable } from './object-table.js'
import type { SchemaChecks } from './schema-checks.js'
import type { DeleteOptions, Target, WriteResult } from './store-types.js'
import type { WatchHistory } from './watch-history.js'

/**
 * The store's parts as its write paths share them: create and update (create-update.ts), patch and
 * apply (patching.ts), delete (deletion.ts) and the garbage collector. The store builds one.
 */
export interface StoreState {
  /** The served resources; CRDs add to it as they are created. */
  readonly registry: ResourceRegistry
  readonly table: ObjectTable
  readonly history: WatchHistory
  readonly ledger: Ledger
  readonly schemas: SchemaChecks
  /** Clock for timestamps. */
  readonly now: () => Date
  /** The uid of each new object. */
  readonly newUid: () => string
  /** The store's delete verb, which the garbage collector runs on dependents and on a namespace's contents. */
  readonly deleteIn: (t: Target, ns: string, name: string, opts: DeleteOptions) => WriteResult
}
