import { describe, expect, it } from 'vitest'
import { executorCommand, REPO_ROOT } from '../../../local/jobs/step-process.js'

describe('the local step command', () => {
  it('runs the executor source under tsx by default', () => {
    expect(executorCommand({})).toEqual({ command: process.execPath, args: ['--import', 'tsx', 'executor/main.ts'], cwd: REPO_ROOT })
  })

  it('runs the bundle npm run build wrote when KINETIC_LOCAL_EXECUTOR names it', () => {
    expect(executorCommand({ KINETIC_LOCAL_EXECUTOR: '/opt/kinetic/dist/executor/main.js' })).toEqual({ command: process.execPath, args: ['/opt/kinetic/dist/executor/main.js'], cwd: REPO_ROOT })
  })
})
