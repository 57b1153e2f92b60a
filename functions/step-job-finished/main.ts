// Process entry point of step-job-finished: real dependencies, HTTP on $PORT.
import { realEngineDeps } from '../../shared/engine/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { createApp } from './index.js'

const deps = realEngineDeps('step-job-finished')
serveFunction(createApp(deps), deps.log)
