// Process entry point of recipes-mcp: real dependencies, HTTP on $PORT.
import pkg from '../../package.json' with { type: 'json' }
import { realEngineDeps } from '../../shared/engine/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { createApp } from './index.js'

const { kube, log } = realEngineDeps('recipes-mcp')
serveFunction(createApp({ kube, log, recipes: recipeConfig(process.env), version: pkg.version }), log)
