// Process entry point of workflow-template-changed: real dependencies, HTTP on $PORT.
import { realEngineDeps } from '../../shared/engine/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { createApp } from './index.js'

const deps = realEngineDeps('workflow-template-changed')
serveFunction(createApp(deps), deps.log)
