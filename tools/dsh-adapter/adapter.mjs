#!/usr/bin/env node
// dsh-conformance IUT adapter for the real DeepSeek Harness tool pipeline
// (@deepseek-ai/dsh-tools, pinned at 0.1.0-rc.8; other versions and working trees through
// lib/compat.mjs) and agent loop (@deepseek-ai/dsh-agent-loop).
//
// Speaks the IUT protocol v1 (conformance/protocol.py) on stdin/stdout, one JSON object a
// line:
//   <- {"cmd":"start","version":1}        -> the handshake
//   <- {"cmd":"run","seq":N,"scenario":S} -> {"seq":N,"trace":T} | {"seq":N,"skipped":true,"reason":R}
//                                           | {"seq":N,"errored":true,"message":M,"details":D}
//   <- {"cmd":"stop"}                     -> exit 0
// Runs are handled one at a time, in order. Anything else goes to stderr (the IUT's log).
//
// Usage: node tools/dsh-adapter/adapter.mjs   (after `npm ci` in tools/dsh-adapter)
//        node adapter.mjs --check   prints what the installed packages support as one JSON
//                                   line, or the one line saying why they cannot be driven (exit 3)

import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { FATAL, PROFILES, TOOLS_VERSION, features, packageVersions } from './lib/compat.mjs'
import { Unsupported } from './lib/faults.mjs'

// Errors without stack frames unless asked for (DSH_ADAPTER_STACKS=1, for debugging an
// errored answer). cordis creates an Error for every effect and waterfall to splice call
// sites into async stacks, and capturing their frames is 40% of the CPU a scenario costs;
// no package reads a stack, and a trace never holds one.
if (process.env.DSH_ADAPTER_STACKS !== '1') Error.stackTraceLimit = 0

const require = createRequire(import.meta.url)
const self = require('./package.json')

// A set of packages the adapter cannot drive: one line saying what is missing, exit 3 (the
// implementation cannot start), before anything that needs the packages is loaded.
if (FATAL !== null) {
  process.stderr.write(`${FATAL}\n`)
  process.exit(3)
}
const { runScenario } = await import('./lib/run.mjs')

const FEATURES = features(['direct', 'loop', 'shipped-approval', 'custom-approval', 'timeout-policy', 'define-tool', 'virtual-time',
  'lone-surrogates', 'getters', 'shared-objects', 'error-shapes', 'kept-results', 'timed-aborts', 'cancel', 'next-turn',
  'pre-step', 'code-mode', 'scripted-code-runtime'])

function handshake() {
  const { agentLoop, ...others } = packageVersions()
  return {
    version: 1,
    implementation: {
      name: '@deepseek-ai/dsh-tools',
      version: TOOLS_VERSION,
      language: 'javascript',
      homepage: 'https://github.com/deepseek-ai/deepseek-harness',
      agentLoop,
      adapter: `${self.name} ${self.version}`,
      node: process.version,
      ...(process.env.DSH_ADAPTER_SOURCE ? { source: process.env.DSH_ADAPTER_SOURCE } : {}),
      // What was run, from the suite's side: the packages' versions and built-code digests, and for
      // a working tree its commit and dirty flag (conformance/tree.py).
      ...(process.env.DSH_ADAPTER_TREE ? { build: JSON.parse(process.env.DSH_ADAPTER_TREE) } : {}),
      packages: others,
    },
    profiles: PROFILES,
    features: FEATURES,
  }
}

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
    return { seq, trace: await runScenario(scenario) }
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
