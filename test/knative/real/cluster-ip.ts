// HTTP to a Service's cluster IP from the test process: the tier's node runs on this machine, so
// kube-proxy's rules route a ClusterIP from here as from a pod (no DNS for cluster names here).
import { request } from 'node:http'

/** GET http://<ip>:80<path>, parsed as JSON; rejects on a status other than 200. */
export function getJson(ip: string, path: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port: 80, path, timeout: 10_000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { body += c })
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`GET ${path}: ${res.statusCode}`))))
    })
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer`)))
    req.on('error', reject)
    req.end()
  })
}

/** POST `body` to http://<ip>:80<path> with `headers`; resolves with the status. */
export function post(ip: string, path: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port: 80, path, method: 'POST', headers, timeout: 120_000 }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('timeout', () => req.destroy(new Error(`POST ${path}: no answer within 120 s`)))
    req.on('error', reject)
    req.end(body)
  })
}
