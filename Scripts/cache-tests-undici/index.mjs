// The part of undici 7 that the cache-tests suite's interim-* tests use, over Debian's undici 5
// (`apt-get install node-undici`): `new Agent().compose(interceptor)` and the handler API of
// undici 7 (onRequestStart, onResponseStart, …), which the suite's interceptor implements to
// collect 1xx responses. Node's fetch calls the composed dispatcher with its own (undici 6)
// handler: that handler is wrapped into the new API for the interceptor, and what the
// interceptor passes on is unwrapped again for undici 5's Agent, which reports 1xx responses to
// `onHeaders` before the final one.
//
// Scripts/run-cache-tests.sh links this directory in as node_modules/undici when the checkout
// has no undici of its own.
import { createRequire } from 'module'

const require = createRequire(import.meta.url)
const real = require('/usr/share/nodejs/undici')

function headersObject (raw) {
  const headers = {}
  for (let i = 0; i + 1 < (raw || []).length; i += 2) {
    const name = raw[i].toString('latin1').toLowerCase()
    const value = raw[i + 1].toString('latin1')
    if (headers[name] === undefined) headers[name] = value
    else if (Array.isArray(headers[name])) headers[name].push(value)
    else headers[name] = [headers[name], value]
  }
  return headers
}

function rawHeaders (headers) {
  const raw = []
  for (const [name, value] of Object.entries(headers || {})) {
    for (const one of [].concat(value)) raw.push(Buffer.from(name, 'latin1'), Buffer.from(String(one), 'latin1'))
  }
  return raw
}

class Controller {
  constructor () {
    this.aborted = false
    this.paused = false
    this.reason = null
  }

  abort (reason) {
    this.aborted = true
    this.reason = reason
    this.abortConnection?.(reason)
  }

  pause () { this.paused = true }

  resume () {
    this.paused = false
    this.resumeReading?.()
  }
}

// Node's fetch handler (onConnect, onHeaders, …) seen through undici 7's handler API.
function wrap (legacy) {
  return {
    onRequestStart (controller, context) { legacy.onConnect?.((error) => controller.abort(error), context) },
    onRequestUpgrade (controller, status, headers, socket) { legacy.onUpgrade?.(status, rawHeaders(headers), socket) },
    onResponseStart (controller, status, headers, message) {
      if (legacy.onHeaders?.(status, rawHeaders(headers), () => controller.resume(), message) === false) controller.pause()
    },
    onResponseData (controller, chunk) { if (legacy.onData?.(chunk) === false) controller.pause() },
    onResponseEnd (controller, trailers) { legacy.onComplete?.(rawHeaders(trailers)) },
    onResponseError (controller, error) { legacy.onError?.(error) }
  }
}

// An undici 7 handler as undici 5's Agent calls handlers.
function unwrap (modern) {
  const controller = new Controller()
  return {
    onConnect (abort) {
      controller.abortConnection = abort
      modern.onRequestStart?.(controller, {})
    },
    onHeaders (status, raw, resume, message) {
      controller.resumeReading = resume
      modern.onResponseStart?.(controller, status, headersObject(raw), message)
      return !controller.paused
    },
    onData (chunk) {
      modern.onResponseData?.(controller, chunk)
      return !controller.paused
    },
    onComplete (trailers) { modern.onResponseEnd?.(controller, headersObject(trailers)) },
    onError (error) { modern.onResponseError?.(controller, error) },
    onUpgrade (status, raw, socket) { modern.onRequestUpgrade?.(controller, status, headersObject(raw), socket) },
    onBodySent () {},
    onRequestSent () {}
  }
}

export class Agent {
  constructor (options) {
    this.agent = new real.Agent(options)
  }

  dispatch (options, handler) { return this.agent.dispatch(options, handler) }

  compose (...interceptors) {
    let dispatch = (options, handler) => this.agent.dispatch(options, unwrap(handler))
    for (const interceptor of interceptors.flat()) dispatch = interceptor(dispatch)
    const agent = this.agent
    return {
      dispatch (options, handler) { return dispatch(options, wrap(handler)) },
      close () { return agent.close() },
      destroy () { return agent.destroy() }
    }
  }

  close () { return this.agent.close() }
  destroy () { return this.agent.destroy() }
}

export default { Agent }
