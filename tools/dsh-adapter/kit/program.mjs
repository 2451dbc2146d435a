// The Code Mode program interpreter: runs the scenario's declarative program named by a
// run_code request against the `tools` namespace the bridge hands over. No model code, no
// worker, no network. The binding registers it as its code runtime (binding.mjs; for DSH
// lib/code-runtime.mjs, the real `ctx.codeRuntime`).
//
// It is the same runtime as kit/program.py of the Python kit, step for step, and records the same
// observations under stage `program` of the run_code call: `start` (the binding names),
// `bind` (a binding call), `settle` (how each call settled, one reaction after it did),
// `log`, `late` (the afterSettle steps begin), `end` (what `run()` resolves with) and `throw`
// (what it rejects with instead, at a `reject` step: a crashed runtime). An abort
// of the run's signal resolves the run with an `abort` failure at once and stops the program
// at its next step or wake-up; a program's continuation (afterSettle) runs then.

// oracle/texts.py: the scripted runtime's own texts (not the spec's).
const RUN_ABORTED = 'the run was aborted'
const INVALID_COMPLETION = "the program's completion value is not lossless JSON"
const TOOL_CALL_ERROR = 'ToolCallError'
const noProgram = (code) => `the scenario has no program "${code}"`
const notAFunction = (name) => `tools.${name} is not a function`

const UNDEFINED_WIRE = { $js: 'undefined' }
const CRASHED = { $js: 'error', class: 'Error', message: 'the code runtime crashed' }
const STOP = Symbol('stop')

class Threw extends Error {}

/** What the steps end with at a `reject` step: run() rejects with `thrown` (wire form). */
class Rejects {
  constructor(thrown) { this.thrown = thrown }
}

function isUndefinedWire(wire) {
  return wire !== null && typeof wire === 'object' && !Array.isArray(wire) && wire.$js === 'undefined'
}

/**
 * Run the program a run_code request names, for the scenario of world `w`.
 * @param {{program: string, bindings?: {global: string, functions: object}[], signal: AbortSignal}} request -
 *   what the bridge hands a code runtime: the program's name (the scenario's `programs[].id`),
 *   the bindings (the `tools` namespace: name -> async function), the run's signal.
 * @param {(value: *) => *} snapshot - the implementation's lossless-JSON snapshot of a value
 *   (undefined when the value is not lossless JSON): the completion value it resolves with.
 * @returns {Promise<{logs: string[], value?: *, error?: {kind: string, message: string}}>}
 */
export function runProgram(w, request, snapshot) {
  const namespace = (request.bindings ?? []).find((b) => b.global === 'tools')
  const programs = w.scenario.programs ?? []
  const program = programs.find((p) => p.id === request.program)
  return new ProgramRun(w, w.currentCall(), String(request.program), namespace?.functions ?? Object.create(null), request.signal, program, snapshot).run()
}

class ProgramRun {
  constructor(w, call, code, functions, signal, program, snapshot) {
    this.w = w
    this.snapshot = snapshot
    this.call = call
    this.code = code
    this.functions = functions
    this.signal = signal
    this.program = program
    this.logs = []
    this.handles = new Map()
    this.calls = 0
    this.stopped = new Promise((resolve) => {
      if (signal.aborted) resolve(STOP)
      else signal.addEventListener('abort', () => resolve(STOP), { once: true })
    })
  }

  obs(what, value) {
    this.w.obs(this.call, 'program', what, this.code, value)
  }

  run() {
    return new Promise((resolve, reject) => {
      let done = false
      const finish = (outcome) => {
        if (done) return
        done = true
        if (outcome instanceof Rejects) {
          this.obs('throw', outcome.thrown)
          reject(this.w.dec(outcome.thrown))
          return
        }
        this.obs('end', this.w.enc(outcome))
        resolve(outcome)
      }
      this.obs('start', { bindings: Object.keys(this.functions).sort() })
      if (this.program === undefined) {
        finish({ logs: [], error: { kind: 'exception', message: noProgram(this.code) } })
        return
      }
      this.signal.addEventListener('abort', () => finish(this.failure('abort', RUN_ABORTED)), { once: true })
      if ((this.program.afterSettle ?? []).length > 0) this.signal.addEventListener('abort', () => { this.late() }, { once: true })
      this.steps().then(finish)
    })
  }

  failure(kind, message) {
    return { logs: [...this.logs], error: { kind, message } }
  }

  async steps() {
    try {
      for (const step of this.program.steps ?? []) {
        if (this.signal.aborted) throw STOP
        switch (step.do) {
          case 'call': {
            const pending = this.callBinding(step.tool, Object.hasOwn(step, 'arguments') ? step.arguments : {})
            if (step.as !== undefined && step.as !== null) this.handles.set(step.as, pending)
            else await this.wait(pending, step.catch === true)
            break
          }
          case 'await':
            await this.wait(this.handles.get(step.handle), step.catch === true)
            break
          case 'log':
            this.logs.push(step.text)
            this.obs('log', step.text)
            break
          case 'sleep':
            await this.wait(this.w.clock.sleep(step.ms ?? 0), false)
            break
          case 'return':
            return this.completion(Object.hasOwn(step, 'value') ? step.value : UNDEFINED_WIRE)
          case 'throw':
            throw new Threw(step.message ?? 'boom')
          case 'fail':
            return this.failure(step.kind, step.message ?? 'the run failed')
          case 'reject':
            return new Rejects(Object.hasOwn(step, 'thrown') ? step.thrown : CRASHED)
          default:
            throw this.w.fault(`program ${this.code}: unknown step ${JSON.stringify(step.do)}`)
        }
      }
    } catch (e) {
      if (e instanceof Threw) return this.failure('exception', e.message)
      if (e === STOP) return this.failure('abort', RUN_ABORTED)
      throw e
    }
    return this.completion(UNDEFINED_WIRE)
  }

  completion(wire) {
    if (isUndefinedWire(wire)) return { logs: [...this.logs] }
    let value
    try {
      value = this.snapshot(this.w.dec(wire))
    } catch {
      value = undefined
    }
    if (value === undefined) return this.failure('invalid-output', INVALID_COMPLETION)
    return { logs: [...this.logs], value }
  }

  async late() {
    this.obs('late', null)
    for (const step of this.program.afterSettle ?? []) {
      if (step.do === 'call') {
        const pending = this.callBinding(step.tool, Object.hasOwn(step, 'arguments') ? step.arguments : {})
        if (step.as !== undefined && step.as !== null) this.handles.set(step.as, pending)
        else await pending.catch(() => {})
      } else if (step.do === 'await') {
        await this.handles.get(step.handle)?.catch(() => {})
      }
    }
  }

  /** `tools[name](arguments)`: the binding's promise, its settlement recorded one reaction later. */
  callBinding(name, wire) {
    this.calls += 1
    const n = this.calls
    this.obs('bind', { n, tool: name, arguments: wire })
    const fn = Object.hasOwn(this.functions, name) ? this.functions[name] : undefined
    const pending = typeof fn === 'function' ? fn(this.w.dec(wire)) : Promise.reject(new TypeError(notAFunction(name)))
    pending.then(
      (value) => this.obs('settle', { n, tool: name, value: this.w.enc(value) }),
      (x) => this.obs('settle', { n, tool: name, error: caught(name, x) }),
    )
    return pending
  }

  /** Await `pending` while the run lasts: an abort of the run's signal stops the program. */
  async wait(pending, catchIt) {
    const settled = pending.then((value) => ({ ok: true, value }), (x) => ({ ok: false, x }))
    const first = await Promise.race([settled, this.stopped])
    if (first === STOP || this.signal.aborted) throw STOP
    if (!first.ok && !catchIt) throw new Threw(first.x?.message ?? String(first.x))
  }
}

/** What the program catches: ToolCallError naming the binding, or the TypeError of a missing one. */
function caught(name, x) {
  if (x instanceof TypeError && x.message === notAFunction(name)) return { name: 'TypeError', message: x.message }
  return { name: TOOL_CALL_ERROR, toolName: name, message: x?.message ?? String(x) }
}
