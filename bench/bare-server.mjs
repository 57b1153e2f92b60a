// The cold-start baseline: the least a process can do to answer a CloudEvent POST with 202
// (node:http only, no framework, no parsing). bench/cold-start.ts compares every function to it.
import { createServer } from 'node:http'

const server = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(req.method === 'POST' ? 202 : 204)
    res.end()
  })
})
server.listen(Number(process.env.PORT ?? 8080))
process.once('SIGTERM', () => server.close(() => process.exit(0)))
