// Process entry point of recipe-policy-changed: real dependencies, HTTP on $PORT.
import { realRecipeDeps } from '../../shared/recipe/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { createApp } from './index.js'

const deps = realRecipeDeps('recipe-policy-changed')
serveFunction(createApp(deps), deps.log)
