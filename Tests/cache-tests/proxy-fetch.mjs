// Routes the global fetch through the forward proxy in $HTTP_PROXY (absolute-form targets), since
// Node 20's fetch ignores proxy variables and the suite's undici is not installable offline.
import http from 'node:http'
const proxy = new URL(process.env.HTTP_PROXY)
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
globalThis.fetch = function (url, init = {}) {
  return new Promise((resolve, reject) => {
    const headers = []
    const given = init.headers || []
    for (const [k, v] of (Array.isArray(given) ? given : Object.entries(given))) headers.push(k, v)
    const target = new URL(url)
    headers.push('Host', target.host)
    if (init.body !== undefined && init.body !== null) headers.push('Content-Length', Buffer.byteLength(init.body).toString())
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: init.method || 'GET', path: target.href,
      headers, agent, signal: init.signal })
    req.on('response', res => {
      const chunks = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => {
        const h = new Headers()
        for (let i = 0; i < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i], res.rawHeaders[i + 1])
        const body = [101, 204, 205, 304].includes(res.statusCode) || (init.method === 'HEAD') ? null : Buffer.concat(chunks)
        const response = new Response(body, { status: res.statusCode, statusText: res.statusMessage, headers: h })
        Object.defineProperty(response, 'url', { value: target.href })
        resolve(response)
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    if (init.body !== undefined && init.body !== null) req.write(init.body)
    req.end()
  })
}
