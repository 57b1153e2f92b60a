// Process entry point of workflowrecipe-changed: real dependencies, HTTP on $PORT.
import { realRecipeDeps } from '../../shared/recipe/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { createApp } from './index.js'

const deps = realRecipeDeps('workflowrecipe-changed')
serveFunction(createApp(deps), deps.log)
