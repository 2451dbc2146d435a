// The protocol loop: the IUT protocol v1 (conformance/iut/protocol.py) on stdin/stdout, one JSON
// object a line, for the implementation a binding binds (binding.mjs):
//   <- {"cmd":"start","version":1}        -> the handshake (the binding's implementation, profiles, features)
//   <- {"cmd":"run","seq":N,"scenario":S} -> {"seq":N,"trace":T} | {"seq":N,"skipped":true,"reason":R}
//                                           | {"seq":N,"errored":true,"message":M,"details":D}
//   <- {"cmd":"stop"}                     -> exit 0
// Runs are handled one at a time, in order. Anything else goes to stderr (the IUT's log).
// `--check` prints the handshake as one JSON line, or the binding's one line saying why it
// cannot drive the implementation (exit 3).
//
// Environment: DSH_ADAPTER_STACKS=1 keeps stack frames in errors (for debugging an errored
// answer); DSH_ADAPTER_TIMINGS=1 (`dsh-conformance bench`) sums up the time per scenario on
// stderr at the end.

import { createInterface } from 'node:readline'
import { NotImplemented, Unsupported } from './faults.mjs'
import { runScenario } from './run.mjs'

/** Speak the protocol for `binding` until stdin ends or a stop arrives. */
export function serve(binding) {
  // Errors without stack frames unless asked for. A framework may create an Error for every
  // effect (cordis does, to splice call sites into async stacks), and capturing their
  // frames costs CPU; a trace never holds one.
  if (process.env.DSH_ADAPTER_STACKS !== '1') Error.stackTraceLimit = 0

  // An implementation the binding cannot drive (or a handshake seam not filled in yet): one
  // line saying why, exit 3 (it cannot start).
  const cannotStart = (why) => {
    process.stderr.write(`${why}\n`)
    process.exit(3)
  }
  let started
  try {
    const fatal = binding.cannotDrive()
    if (fatal !== null && fatal !== undefined) cannotStart(fatal)
    started = {
      version: 1,
      implementation: binding.implementation(),
      profiles: binding.profiles(),
      features: binding.features(),
    }
  } catch (e) {
    cannotStart(e instanceof NotImplemented ? e.message : `the binding's handshake failed: ${e?.name ?? 'Error'}: ${e?.message ?? e}`)
  }
  const handshake = () => started

  if (process.argv.includes('--check')) {
    process.stdout.write(`${JSON.stringify(handshake())}\n`)
    process.exit(0)
  }

  function send(message) {
    process.stdout.write(`${JSON.stringify(message)}\n`)
  }

  function log(...parts) {
    process.stderr.write(`dsh-adapter: ${parts.join(' ')}\n`)
  }

  async function answer(seq, scenario) {
    try {
      return { seq, trace: await runScenario(binding, scenario) }
    } catch (e) {
      if (e instanceof Unsupported) return { seq, skipped: true, reason: e.message }
      return {
        seq,
        errored: true,
        message: `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`,
        details: { stack: typeof e?.stack === 'string' ? e.stack : null },
      }
    }
  }

  // DSH_ADAPTER_TIMINGS=1 (`dsh-conformance bench`): the adapter's time per scenario, from
  // the line read to the answer written, summed up on stderr at the end (the IUT's log, so
  // the protocol is untouched).
  const timings = process.env.DSH_ADAPTER_TIMINGS === '1' ? [] : null
  const window = { first: null, last: null } // µs on the monotonic clock of CPU profiles (node --cpu-prof)
  const clock = () => Number(process.hrtime.bigint() / 1000n)

  function reportTimings() {
    if (timings === null || timings.length === 0) return
    const sorted = [...timings].sort((a, b) => a - b)
    const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
    const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length
    log('timings', JSON.stringify({
      scenarios: sorted.length, median_ms: at(0.5), mean_ms: mean, p90_ms: at(0.9), max_ms: sorted[sorted.length - 1],
      window_us: [window.first, window.last],
    }))
    timings.length = 0 // once, whether the input ends with a stop or not
  }

  async function handle(line) {
    if (line.trim() === '') return true
    const started = timings === null ? 0 : performance.now()
    if (timings !== null) window.first ??= clock()
    let message
    try {
      message = JSON.parse(line)
    } catch (e) {
      log('not JSON:', e.message)
      return true
    }
    switch (message?.cmd) {
      case 'start':
        if (message.version !== undefined && message.version !== 1) log(`asked for protocol version ${message.version}; speaking 1`)
        send(handshake())
        return true
      case 'run':
        send(await answer(message.seq, message.scenario))
        if (timings !== null) {
          timings.push(performance.now() - started)
          window.last = clock()
        }
        return true
      case 'stop':
        reportTimings()
        return false
      default:
        log('unknown command:', JSON.stringify(message?.cmd))
        return true
    }
  }

  // A participant may leave a rejection nobody awaits, or throw from a timer: that belongs to
  // the run in progress, never to the adapter.
  process.on('unhandledRejection', (reason) => log('unhandled rejection:', reason?.stack ?? String(reason)))
  process.on('uncaughtException', (error) => log('uncaught exception:', error?.stack ?? String(error)))

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
  let queue = Promise.resolve(true)
  lines.on('line', (line) => {
    queue = queue.then((going) => (going ? handle(line) : false)).then((going) => {
      if (!going) {
        lines.close()
        process.stdout.write('', () => process.exit(0))
      }
      return going
    }, (e) => {
      log('internal error:', e?.stack ?? String(e))
      return true
    })
  })
  lines.on('close', () => {
    queue.then(() => {
      reportTimings()
      process.stdout.write('', () => process.exit(0))
    })
  })
}
