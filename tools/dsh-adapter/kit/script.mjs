// The script interpreter: runs a participant's steps (kit/scenario.py) against the
// implementation's pipeline objects, and records what the oracle's interpreter (kit/script.py) records:
// the participant's `call`, its `return` or `throw`, and what each `mutate`, `observe`,
// `abort`, `defer-context`, `conclude-turn`, `register`, `unregister` and `inject` step did.
//
// One generator serves synchronous and asynchronous participants: it yields a promise at
// each suspending step (`next`, `await-signal`, `sleep`, `gate`). An asynchronous
// participant awaits what it yields; a synchronous one (guard, finalizeContent, render,
// presentationMeta, isConcurrencySafe, tools/result observer) must never yield, which the
// scenario language guarantees.
//
// The steps that need the implementation beyond the execution record (a filesystem intent, a
// tool-owned session event, the loop agent's inject, steer and cancel) call the binding's
// seams through the world (`w.binding`, binding.mjs).

import { AdapterFault } from './faults.mjs'

export const NOTHING = Symbol('nothing')

const DELEGATE = [{ do: 'next' }, { do: 'return-next' }]
const DEFAULT_TARGET = { path: 'notes.txt' } // kit/scenario.py Dispatch.target
const NO_AGENT_SESSION = 'append: the call has no agent, so no session to append to' // kit/engine_texts.py

/** One invocation of a participant: who it is and what it was handed. */
export class Invocation {
  constructor({ who, stage, call = null, record = null, next = null, result = NOTHING, args = NOTHING, request = null, requestSignal = null }) {
    this.who = who
    this.stage = stage
    this.call = call // the call it runs for: the scenario's call id, whatever the record says now
    this.record = record
    this.next = next
    this.result = result // the result handed to it (wrappers: what next() returned)
    this.args = args // the body's or classifier's arguments parameter
    this.request = request // an approval request
    this.requestSignal = requestSignal
    this.savedSignal = NOTHING
    this.lastNext = NOTHING
    this.thrown = NOTHING // [jsValue, wire] of the latest `throw` step
  }
}

/** The steps a behavior runs for this invocation (byCall wins over perInvocation). */
export function scriptFor(behavior, callId, invocation) {
  if (behavior === undefined || behavior === null) return []
  if (Array.isArray(behavior)) return behavior
  if (callId !== null && behavior.byCall && Object.hasOwn(behavior.byCall, callId)) return behavior.byCall[callId]
  const per = behavior.perInvocation ?? []
  if (per.length > 0) return per[Math.min(invocation, per.length - 1)]
  return behavior.steps ?? []
}

export function delegateBehavior() {
  return DELEGATE
}

function isPromiseToken(wire) {
  return wire !== null && typeof wire === 'object' && !Array.isArray(wire) && wire.$js === 'promise'
}

/**
 * Run an asynchronous participant (waterfall listener, approval service or answerer, tool
 * body). A returned promise is awaited (P5: `await listener()`; `await tool.execute()`).
 */
export async function perform(w, inv, behavior) {
  const steps = scriptFor(behavior, inv.call, w.nextInvocation(inv.who))
  w.obs(inv.call, inv.stage, 'call', inv.who, null)
  let value
  let wire
  try {
    ;({ value, wire } = await driveAsync(run(w, inv, steps)))
    while (isPromiseToken(wire)) {
      // The participant returned a promise: its settlement is the participant's outcome.
      const inner = 'rejects' in wire ? NOTHING : 'resolves' in wire ? wire.resolves : { $js: 'undefined' }
      try {
        value = await value
      } catch (x) {
        // A rejection, or a resolution with a value whose `then` cannot be read.
        inv.thrown = [x, 'rejects' in wire ? wire.rejects : w.enc(x)]
        throw x
      }
      wire = inner
    }
  } catch (x) {
    w.obs(inv.call, inv.stage, 'throw', inv.who, thrownWire(w, inv, x))
    throw x
  }
  w.obs(inv.call, inv.stage, 'return', inv.who, wire === undefined ? w.enc(value) : wire)
  return value
}

/** Run a synchronous participant: a returned promise is handed over as it is (P50, P94). */
export function performSync(w, inv, behavior) {
  const steps = scriptFor(behavior, inv.call, w.nextInvocation(inv.who))
  w.obs(inv.call, inv.stage, 'call', inv.who, null)
  let out
  try {
    const gen = run(w, inv, steps)
    const r = gen.next()
    if (!r.done) {
      gen.return()
      throw w.fault(`synchronous participant ${inv.who} has a suspending step`)
    }
    out = r.value
  } catch (x) {
    w.obs(inv.call, inv.stage, 'throw', inv.who, thrownWire(w, inv, x))
    throw x
  }
  w.obs(inv.call, inv.stage, 'return', inv.who, out.wire === undefined ? w.enc(out.value) : out.wire)
  return out.value
}

function thrownWire(w, inv, x) {
  if (inv.thrown !== NOTHING && Object.is(inv.thrown[0], x)) return inv.thrown[1]
  return w.enc(x)
}

async function driveAsync(gen) {
  let input
  let failed = false
  for (;;) {
    const r = failed ? gen.throw(input) : gen.next(input)
    if (r.done) return r.value
    try {
      input = await r.value
      failed = false
    } catch (x) {
      input = x
      failed = true
    }
  }
}

function* run(w, inv, steps) {
  for (const step of steps) {
    switch (step.do) {
      case 'return':
        return { value: w.dec(step.value ?? null), wire: step.value ?? null }
      case 'return-next':
        return { value: inv.lastNext === NOTHING ? undefined : inv.lastNext }
      case 'throw': {
        const x = w.dec(step.value ?? null)
        inv.thrown = [x, step.value ?? null]
        throw x
      }
      case 'next': {
        if (inv.next === null) throw w.fault(`participant ${inv.who}: a 'next' step outside a waterfall`)
        if (step.catch) {
          try {
            inv.lastNext = yield inv.next()
          } catch {
            inv.lastNext = undefined
          }
        } else {
          inv.lastNext = yield inv.next()
        }
        if (inv.stage === 'execute') inv.result = inv.lastNext // what a wrapper is handed is next()'s value (P11)
        break
      }
      case 'mutate':
        mutate(w, inv, step)
        break
      case 'set-signal': {
        const rec = needRecord(w, inv)
        if (step.signal === 'restore') {
          // Restoring writes the record's signal: on a frozen record the write fails.
          rec.signal = inv.savedSignal === NOTHING ? rec.signal : inv.savedSignal
        } else {
          const saved = rec.signal
          rec.signal = w.namedSignal(step.signal)
          if (inv.savedSignal === NOTHING) inv.savedSignal = saved
        }
        break
      }
      case 'abort': {
        const signal = step.signal ?? 'caller'
        const abort = signal === 'caller' ? w.callerAbort(needRecord(w, inv))
          : signal === 'step' && w.loopAgent !== null ? w.stepAbort() : w.namedAbort(signal)
        w.obs(inv.call, inv.stage, 'abort', inv.who, signal)
        if (step.reason === undefined || step.reason === null) abort()
        else abort(w.dec(step.reason))
        break
      }
      case 'defer-context': {
        needRecord(w, inv).deferContext(w.dec(step.message))
        w.obs(inv.call, inv.stage, 'defer', inv.who, step.message)
        break
      }
      case 'conclude-turn':
        needRecord(w, inv).concludeTurn()
        w.obs(inv.call, inv.stage, 'conclude', inv.who, null)
        break
      case 'await-signal': {
        const signal = inv.requestSignal ?? needRecord(w, inv).signal
        if (!signal.aborted) yield new Promise((resolve) => { signal.addEventListener('abort', () => resolve(), { once: true }) })
        break
      }
      case 'sleep':
        yield w.clock.sleep(step.ms ?? 0)
        break
      case 'gate': {
        const waiting = w.gateFor(inv.call)
        if (waiting !== null) yield waiting
        break
      }
      case 'register':
        w.obs(inv.call, inv.stage, 'register', inv.who, step.ref)
        w.register(step.ref)
        break
      case 'unregister':
        w.obs(inv.call, inv.stage, 'unregister', inv.who, step.ref)
        w.unregister(step.ref)
        break
      case 'inject':
      case 'steer': {
        if (w.loopAgent === null) throw w.fault(`participant ${inv.who}: '${step.do}' needs a loop run`)
        w.obs(inv.call, inv.stage, 'inject', inv.who, step.message)
        w.binding.agentMessage(w, step.do, w.dec(step.message))
        break
      }
      case 'observe': {
        let view
        try {
          view = observe(w, inv, step.what ?? 'record', step.name)
        } catch (e) {
          throw e instanceof AdapterFault ? e : w.fault(`observe ${step.what}: ${e?.stack ?? e}`)
        }
        w.obs(inv.call, inv.stage, 'observe', inv.who, view)
        break
      }
      case 'dispatch': {
        // A filesystem body's intent (P71), dispatched as the tool-fs bodies do, with the
        // record as the actor and an undecided default (binding `dispatchIntent`).
        const rec = needRecord(w, inv)
        const wire = Object.hasOwn(step, 'target') ? step.target : DEFAULT_TARGET
        w.obs(inv.call, 'fs-intent', 'start', inv.who, { event: step.event, target: wire })
        let decision
        try {
          decision = yield w.binding.dispatchIntent(w, step.event, w.dec(wire), rec)
        } catch (x) {
          w.obs(inv.call, 'fs-intent', 'throw', inv.who, w.enc(x))
          if (step.catch !== true) throw x
          break
        }
        w.obs(inv.call, 'fs-intent', 'end', inv.who, w.enc(decision))
        break
      }
      case 'keep': // the very object, so that its identity survives (P63)
        if (step.what === 'signal') { // P60: the record's signal itself, looked at later by `observe kept`
          const rec = needRecord(w, inv)
          w.keptSignals.set(JSON.stringify([inv.call, step.name]), { signal: rec.signal, is: w.signalName(rec, rec.signal) })
          break
        }
        w.kept.set(step.name, step.what === 'next'
          ? (inv.lastNext === NOTHING ? undefined : inv.lastNext)
          : (inv.result === NOTHING ? undefined : inv.result))
        break
      case 'return-kept':
        return { value: w.kept.get(step.name) }
      case 'cancel': {
        // The agent's cancel(): without keepInbox it clears both queues, then aborts (P112).
        if (w.loopAgent === null) throw w.fault(`participant ${inv.who}: 'cancel' needs a loop run`)
        const keepInbox = step.keepInbox === true
        w.obs(inv.call, inv.stage, 'cancel', inv.who, { keepInbox })
        w.binding.cancelAgent(w, step.reason === undefined || step.reason === null ? undefined : w.dec(step.reason), { keepInbox })
        break
      }
      case 'append': {
        // A tool-owned session event, appended as the todo tool's body does (P71).
        const rec = needRecord(w, inv)
        const type = step.type ?? 'todo/write'
        if (rec.agent === undefined || rec.agent === null) throw new Error(NO_AGENT_SESSION)
        w.binding.appendEvent(w, rec, type, w.dec(step.data))
        w.obs(inv.call, 'tool-event', 'append', inv.who, { type })
        break
      }
      default:
        throw w.fault(`participant ${inv.who}: unknown step ${JSON.stringify(step.do)}`)
    }
  }
  return { value: undefined, wire: { $js: 'undefined' } }
}

function needRecord(w, inv) {
  if (inv.record === null) throw w.fault(`participant ${inv.who}: this step needs an execution record`)
  return inv.record
}

// ------------------------------------------------------------------------------- observe

function observe(w, inv, what, name) {
  switch (what) {
    case 'kept': { // P60: a kept signal as it is now; nothing kept under the name (yet): no signal
      const kept = w.keptSignals.get(JSON.stringify([inv.call, name])) // per call, as it was kept
      if (kept === undefined) return { kept: name }
      const view = { is: kept.is, aborted: Boolean(kept.signal?.aborted) }
      if (kept.signal?.aborted) view.reason = w.enc(kept.signal.reason)
      return { kept: name, signal: view }
    }
    case 'record': return recordView(w, needRecord(w, inv))
    case 'result':
      if (inv.result === NOTHING) return { result: { $js: 'undefined' }, frozen: false }
      return { result: w.enc(inv.result), frozen: w.isDeeplyFrozen(inv.result) }
    case 'args':
      if (inv.args === NOTHING) return { args: { $js: 'undefined' }, isRecordArguments: false }
      return {
        args: w.enc(inv.args),
        isRecordArguments: inv.record !== null && inv.args === inv.record.arguments,
        frozen: w.isDeeplyFrozen(inv.args),
      }
    case 'request': {
      const out = {}
      const req = inv.request
      if (req !== null && typeof req === 'object') {
        for (const key of Object.keys(req)) {
          if (key === 'signal') continue
          out[key] = key === 'agent' ? w.agentId(req.agent) : w.enc(req[key])
        }
      }
      out.signal = { aborted: Boolean(inv.requestSignal?.aborted) }
      return out
    }
  }
  throw w.fault(`observe: unknown target ${JSON.stringify(what)}`)
}

/** What an `observe record` step records (oracle Record.view). */
export function recordView(w, rec) {
  const signal = rec.signal
  const view = {
    callId: w.enc(rec.callId),
    rootCallId: w.enc(rec.rootCallId),
    name: w.enc(rec.name),
    hasAgent: rec.agent !== undefined,
    hasParent: rec.parent !== undefined,
    arguments: w.enc(rec.arguments),
    signal: { is: w.signalName(rec, signal), aborted: Boolean(signal?.aborted) },
    frozen: Object.isFrozen(rec),
  }
  if (signal?.aborted) view.signal.reason = w.enc(signal.reason)
  if (rec.agent !== undefined) view.agent = w.agentId(rec.agent)
  return view
}

// ------------------------------------------------------------------------------- mutate

function mutate(w, inv, step) {
  const target = String(step.target)
  const [root, ...path] = target.split('.')
  const op = step.op ?? 'set'
  let failure = null
  try {
    write(rootObject(w, inv, root), root, path, op, () => w.dec(step.value ?? null))
  } catch (e) {
    if (e instanceof AdapterFault) throw e
    failure = e
  }
  w.obs(inv.call, inv.stage, 'mutate', inv.who, { target, op, outcome: failure === null ? 'applied' : 'failed' })
  if (failure !== null && step.catch === false) throw failure
}

function rootObject(w, inv, root) {
  switch (root) {
    case 'record': return needRecord(w, inv)
    case 'args': return inv.args === NOTHING ? undefined : inv.args
    case 'result': return inv.result === NOTHING ? undefined : inv.result
    case 'request': return inv.request ?? undefined
    case 'input': return w.inputs.get(inv.call)
  }
  throw w.fault(`mutate: unknown root ${JSON.stringify(root)}`)
}

function write(obj, root, path, op, value) {
  // Module code is strict: a write to a frozen or non-extensible object throws a TypeError.
  if (path.length === 0) {
    // A participant cannot rebind the root itself: the oracle counts it a failed write.
    throw new TypeError(`Cannot assign to read only property '${root}' of object '#<Object>'`)
  }
  let node = obj
  for (const part of path.slice(0, -1)) node = node[part]
  const key = path[path.length - 1]
  switch (op) {
    case 'set':
      node[key] = value()
      return
    case 'delete':
      delete node[key]
      return
    case 'define':
      Object.defineProperty(node, key, { value: value(), writable: true, enumerable: true, configurable: true })
      return
  }
  throw new TypeError(`unknown mutation op ${op}`)
}
