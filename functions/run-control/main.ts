// Process entry point of run-control: real dependencies, HTTP on $PORT.
import { realEngineDeps } from '../../shared/engine/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { runControlConfig } from '../../shared/run-control/config.js'
import { createApp } from './index.js'

const { kube, log, now } = realEngineDeps('run-control')
serveFunction(createApp({ kube, log, now, config: runControlConfig(process.env) }), log)
