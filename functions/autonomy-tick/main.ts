// Process entry point of autonomy-tick: real dependencies, HTTP on $PORT.
import { realEngineDeps } from '../../shared/engine/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { createApp } from './index.js'

const deps = realEngineDeps('autonomy-tick')
serveFunction(createApp(deps), deps.log)
