import type { Workflow } from '../../shared/schemas/workflow.js'
import { FakeKube } from '../fakes/kube.js'

/** A FakeKube whose new Workflows get the test clock's creation time, as the API server would stamp it. */
export class ClockedKube extends FakeKube {
  constructor(readonly clock: { now: Date }, objects: ConstructorParameters<typeof FakeKube>[0] = {}) {
    super(objects)
  }

  override async createWorkflow(workflow: Workflow): Promise<Workflow | 'exists'> {
    return super.createWorkflow({ ...workflow, metadata: { ...workflow.metadata, creationTimestamp: this.clock.now.toISOString() } })
  }
}
