// Process entry point for the dead-letter Service: real logger, HTTP on $PORT.
import { serveFunction } from '../../shared/http/serve.js'
import { createLogger } from '../../shared/log.js'
import { createApp } from './index.js'

const log = createLogger('dead-letter')
serveFunction(createApp({ log }), log)
