// The state of one scenario run: the declared participants and their registrations, the
// agents, named signals, loop gates, which call each execution record belongs to, and the
// trace being recorded. What only the implementation knows it asks the binding
// (`this.binding`, binding.mjs); a binding may keep state of its own for the run on the
// world (binding.mjs `open`).

import { AsyncLocalStorage } from 'node:async_hooks'
import { decode, encode, isDeeplyFrozen } from './codec.mjs'
import { AdapterFault, Unsupported } from './faults.mjs'
import { Invocation, performSync } from './script.mjs'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The call a synchronous projection (render, presentationMeta) runs for. */
const current = new AsyncLocalStorage()
let running = 0 // Worlds between `begin` and `end`

export class World {
  constructor(scenario, binding, clock) {
    this.scenario = scenario
    this.binding = binding
    // The classes tokens refer to, and the getters of this run (codec.mjs).
    this.realm = { ...binding.realm(), getter: (id) => this.getterFunction(id) }
    this.clock = clock
    this.trace = { observations: [], events: [], results: [], warnings: [] }
    this.fatal = null
    this.invocations = new Map()
    this.agents = new Map() // scenario id -> { id, key, ... }: `key` is what a call's input names (binding `prepare`)
    this.agentIds = new Map() // agent key -> scenario id
    this.decl = new Map() // ref -> { kind, item }
    this.disposers = new Map() // ref -> [disposer]
    this.named = new Map() // signal name -> AbortController
    this.signalNames = new WeakMap() // other signals the trace names (the binding's: a timeout policy's deadline)
    this.executeEntry = new WeakMap() // record -> its signal when the tools/execute waterfall started (its probe)
    this.callers = new Map() // call id -> AbortController (direct runs)
    this.inputs = new Map() // call id -> the caller's input object
    this.execs = new Map() // call id -> the execution record the probes saw
    this.execCalls = new WeakMap() // execution record -> call id
    this.observed = new Map() // call id -> the result tools/result observers received
    this.gates = new Map()
    this.loopAgent = null // the binding's loop agent while a loop run runs (steps that need one check it)
    this.approvalIds = new Map()
    this.messageIds = new Map() // random ids of messages the package made -> generated-1, generated-2, ...
    this.tokenCalls = new Map() // execution token -> call id (a sub-call's parent is its run_code's token)
    this.eventAt = new Map() // loop session seq -> observations recorded before it was appended
    this.classifying = null // the sub-call whose classifier runs now
    this.origins = new WeakMap() // decoded object -> the wire form the scenario wrote
    this.kept = new Map() // `keep` steps: name -> the very object (P63)
    this.keptSignals = new Map() // `keep signal` steps: JSON [call, name] -> { signal, is: its name then } (P60)
    this.getters = new Map((scenario.getters ?? []).map((g) => [g.id, g]))
    for (const t of scenario.tools ?? []) this.declare(t.id ?? t.name, 'tool', t)
    for (const l of scenario.listeners ?? []) this.declare(l.id, 'listener', l)
    for (const g of scenario.guards ?? []) this.declare(g.id, 'guard', g)
  }

  declare(ref, kind, item) {
    if (this.decl.has(ref)) throw new Unsupported(`duplicate participant id ${JSON.stringify(ref)}`)
    this.decl.set(ref, { kind, item })
  }

  // ----------------------------------------------------------------------------- trace

  obs(call, stage, what, who, value) {
    this.trace.observations.push({ call: call ?? null, stage, what, who: who ?? null, value: value ?? null })
  }

  enc(value) {
    return this.renumberMessages(encode(value, this.realm, this.origins))
  }

  /**
   * A user message the package made itself (P126's image context: createUserMessage draws a
   * random UUID) gets a stable id, `generated-<n>` in order of sight, as the oracle numbers
   * the messages it makes in order of creation.
   */
  renumberMessages(wire) {
    if (wire === null || typeof wire !== 'object') return wire
    // Plain loops over a wire value (JSON-shaped data: own data properties only), visiting
    // items and keys in the order forEach and Object.entries did, without their callbacks
    // and [key, value] pairs.
    let out = null
    if (Array.isArray(wire)) {
      for (let i = 0; i < wire.length; i++) {
        if (!(i in wire)) continue // forEach skips holes
        const item = wire[i]
        const next = this.renumberMessages(item)
        if (next !== item) (out ??= [...wire])[i] = next
      }
      return out ?? wire
    }
    const keys = Object.keys(wire)
    const user = wire.role === 'user'
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]
      const item = wire[key]
      const next = user && key === 'id' && typeof item === 'string' && UUID.test(item)
        ? this.messageId(item) : this.renumberMessages(item)
      if (next !== item) (out ??= { ...wire })[key] = next
    }
    return out ?? wire
  }

  dec(wire) {
    try {
      return decode(wire, this.realm, this.origins)
    } catch (e) {
      throw this.fault(`cannot decode ${JSON.stringify(wire)}: ${e.message}`)
    }
  }

  isDeeplyFrozen(value) {
    return isDeeplyFrozen(value)
  }

  /** Remember the first adapter/scenario fault (see faults.mjs) and return it to throw. */
  fault(message) {
    const e = new AdapterFault(message)
    this.fatal ??= e
    return e
  }

  /**
   * The get function of a getter token: each read runs the getter's script as a
   * synchronous participant (stage `getter`), attributed to no call (kit/driver.py
   * RunRealm: reads are compared per getter).
   */
  getterFunction(id) {
    const w = this
    return function () {
      const getter = w.getters.get(id)
      if (getter === undefined) throw w.fault(`no getter has id ${JSON.stringify(id)}`)
      return performSync(w, new Invocation({ who: id, stage: 'getter', call: null, record: null }), getter.script ?? [{ do: 'return', value: { $js: 'undefined' } }])
    }
  }

  nextInvocation(who) {
    const n = this.invocations.get(who) ?? 0
    this.invocations.set(who, n + 1)
    return n
  }

  /** Approval request ids are random UUIDs: renumbered approval-1, approval-2, ... in order. */
  approvalId(id) {
    if (!this.approvalIds.has(id)) this.approvalIds.set(id, `approval-${this.approvalIds.size + 1}`)
    return this.approvalIds.get(id)
  }

  // ----------------------------------------------------------------------------- agents

  agentId(key) {
    if (this.agentIds.has(key)) return this.agentIds.get(key)
    return this.enc(key)
  }

  /** Record the scenario's agent `id` (binding `prepare`): `key` is what inputs and requests name it by. */
  addAgent(id, key, extra = {}) {
    const entry = { id, key, ...extra }
    this.agents.set(id, entry)
    this.agentIds.set(key, id)
    return entry
  }

  // ----------------------------------------------------------------------------- registration

  /** (Re-)register a declared tool, listener or guard (binding `register`). The implementation's throws propagate. */
  register(ref) {
    const d = this.decl.get(ref)
    if (d === undefined) throw this.fault(`no tool, listener or guard has id ${JSON.stringify(ref)}`)
    const dispose = this.binding.register(this, d.kind, d.item)
    if (!this.disposers.has(ref)) this.disposers.set(ref, [])
    this.disposers.get(ref).push(dispose)
  }

  /**
   * Register every declared participant not marked `registered: false`, except those `skip`
   * keeps back (a binding registers some later). A registration the implementation refuses
   * is a skip: registration-time validation is out of scope (spec 1.3).
   */
  registerDeclared(skip = () => false) {
    for (const [ref, { item }] of this.decl) {
      if (item.registered === false || skip(ref, item)) continue
      try {
        this.register(ref)
      } catch (e) {
        if (e instanceof Unsupported) throw e
        throw new Unsupported(`the package refuses the registration of ${JSON.stringify(ref)} (registration-time validation is out of scope, spec 1.3): ${e?.message ?? e}`)
      }
    }
  }

  unregister(ref) {
    if (!this.decl.has(ref)) throw this.fault(`no tool, listener or guard has id ${JSON.stringify(ref)}`)
    for (const dispose of this.disposers.get(ref) ?? []) dispose()
    this.disposers.set(ref, [])
  }

  // ----------------------------------------------------------------------------- calls

  /** The run starts (kit/run.mjs, before the binding's pipeline is opened). */
  begin() {
    running += 1
  }

  /**
   * The run has ended (after the binding's `leave` settled and its answer is made). When no
   * other run is in progress the call store is switched off: an enabled AsyncLocalStorage
   * costs a hook call on every promise made anywhere, and until the next run's first
   * `within` no call is running that a projection could be attributed to. Nothing of the
   * ended run runs in between: `settle` returned only after a full turn (every queued
   * reaction ran), and what is still pending waits on the run's gates, signals or virtual
   * timers (dropped with its clock), which nothing else reaches. `within` switches the store
   * on again (`run` enables it), and what it set on async resources before stays set
   * (`disable` stops propagation and reads only), so a read made while a call runs sees what
   * it saw with the store never off.
   */
  end() {
    running -= 1
    if (running === 0) current.disable()
  }

  /** Run `fn` as part of call `callId` (so projections know their record). */
  within(callId, fn) {
    return current.run({ callId }, fn)
  }

  /** The scenario call whose pipeline is running now (its async context), or null. */
  currentCall() {
    return current.getStore()?.callId ?? null
  }

  currentExec() {
    const call = this.currentCall()
    return call === null ? null : this.execs.get(call) ?? null
  }

  /**
   * The scenario call an execution record belongs to. Observations are attributed to the
   * call, not to whatever `record.callId` holds now: a participant may have rewritten it.
   */
  callOf(exec) {
    if (exec === null || exec === undefined) return null
    if (this.execCalls.has(exec)) return this.execCalls.get(exec)
    return this.currentCall() ?? exec.callId
  }

  /** First sight of a record (the pre-execute probe, before any participant ran). */
  adopt(exec) {
    const call = this.currentCall() ?? exec.callId
    this.execCalls.set(exec, call)
    this.execs.set(call, exec)
    if (exec.token !== undefined) this.tokenCalls.set(exec.token, call)
    return call
  }

  /** The call an approval request is made for. */
  requestCall(req) {
    return this.currentCall() ?? req.callId ?? null
  }

  // ----------------------------------------------------------------------------- signals

  namedController(name) {
    if (!this.named.has(name)) this.named.set(name, new AbortController())
    return this.named.get(name)
  }

  namedSignal(name) {
    return this.namedController(name).signal
  }

  namedAbort(name) {
    const controller = this.namedController(name)
    return (...reason) => controller.abort(...reason)
  }

  /**
   * Abort "caller": the call's own caller signal; in a loop run, the step's signal; for a
   * run_code sub-call, the run_code call's caller (the run's signal is the bridge's own).
   */
  callerAbort(rec) {
    if (this.loopAgent !== null) return this.stepAbort()
    let call = this.callOf(rec)
    while (rec?.parent !== undefined && this.tokenCalls.has(rec.parent)) {
      call = this.tokenCalls.get(rec.parent)
      rec = this.execs.get(call)
    }
    const controller = this.callers.get(call)
    if (controller === undefined) throw this.fault(`no caller signal for call ${JSON.stringify(call)}`)
    return (...reason) => controller.abort(...reason)
  }

  /** Abort "step" (loop runs): the step's signal, as a user's cancel does (binding `cancelAgent`). */
  stepAbort() {
    return (...reason) => this.binding.cancelAgent(this, reason[0], { keepInbox: true })
  }

  /** Message ids the package drew at random (crypto.randomUUID): renumbered in order of sight. */
  messageId(id) {
    if (!this.messageIds.has(id)) this.messageIds.set(id, `generated-${this.messageIds.size + 1}`)
    return this.messageIds.get(id)
  }

  /** How an `observe record` step names the record's signal (oracle Record.view). */
  signalName(rec, signal) {
    if (signal !== undefined && signal === this.inputs.get(this.callOf(rec))?.signal) return 'caller'
    for (const [name, controller] of this.named) if (controller.signal === signal) return name
    if (signal !== null && typeof signal === 'object' && this.signalNames.has(signal)) return this.signalNames.get(signal)
    return 'fused'
  }

  // ----------------------------------------------------------------------------- gates

  gate(callId) {
    if (!this.gates.has(callId)) {
      let open
      const promise = new Promise((resolve) => { open = resolve })
      this.gates.set(callId, { promise, open })
    }
    return this.gates.get(callId)
  }

  openGate(callId) {
    this.gate(callId).open()
  }

  /** Loop gates: a body waits until every call released before it has finished; null when it need not wait. */
  gateFor(callId) {
    const release = this.scenario.run?.release ?? []
    if (callId === null || !release.includes(callId)) return null
    const earlier = release.slice(0, release.indexOf(callId))
    if (earlier.length === 0) return null
    return (async () => {
      for (const c of earlier) await this.gate(c).promise
    })()
  }

  // ----------------------------------------------------------------------------- results

  recordResult(callId, result) {
    this.trace.results.push({
      callId,
      result: this.enc(result),
      frozen: isDeeplyFrozen(result),
      observed: this.observed.has(callId) && this.observed.get(callId) === result,
    })
  }

  /** The approval probe: what the registry asks `ctx.approval`, and its outcome or throw. */
  probeApproval(req, ask) {
    const call = this.requestCall(req)
    const request = {}
    for (const key of Object.keys(req)) {
      if (key === 'signal') continue
      request[key] = key === 'agent' ? this.agentId(req.agent) : this.enc(req[key])
    }
    this.obs(call, 'approval', 'request', null, request)
    let answer
    try {
      answer = ask()
    } catch (x) {
      this.obs(call, 'approval', 'throw', null, this.enc(x))
      throw x
    }
    Promise.resolve(answer).then(
      (outcome) => this.obs(call, 'approval', 'outcome', null, this.enc(outcome)),
      (x) => this.obs(call, 'approval', 'throw', null, this.enc(x)),
    )
    return answer
  }
}
