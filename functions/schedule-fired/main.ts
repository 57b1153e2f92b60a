// Process entry point of schedule-fired: real dependencies, HTTP on $PORT.
import { realEngineDeps } from '../../shared/engine/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { createApp } from './index.js'

const deps = realEngineDeps('schedule-fired')
serveFunction(createApp(deps), deps.log)
