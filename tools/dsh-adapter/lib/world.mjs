// The state of one scenario run: the real context and the registrations made in it, the
// agents (scope keys), named signals, loop gates, and the trace being recorded.

import { AsyncLocalStorage } from 'node:async_hooks'
import { decode, encode, isDeeplyFrozen } from './codec.mjs'
import { AdapterFault, Unsupported } from './faults.mjs'
import { guardFunction, listenerFunction, toolDefinition } from './participants.mjs'
import { Invocation, performSync } from './script.mjs'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The call a synchronous projection (render, presentationMeta) runs for. */
const current = new AsyncLocalStorage()

export class World {
  constructor(scenario, realm, clock) {
    this.scenario = scenario
    // The classes tokens refer to, and the getters of this run (codec.mjs).
    this.realm = { ...realm, getter: (id) => this.getterFunction(id) }
    this.clock = clock
    this.trace = { observations: [], events: [], results: [], warnings: [] }
    this.fatal = null
    this.host = null // the adapter's plugin context (injects tools)
    this.invocations = new Map()
    this.agents = new Map() // scenario id -> { id, key, ctx, session }
    this.agentIds = new Map() // scope key -> scenario id
    this.decl = new Map() // ref -> { kind, item }
    this.disposers = new Map() // ref -> [disposer]
    this.named = new Map() // signal name -> AbortController
    this.signalNames = new WeakMap() // other signals the trace names (the timeout policy's deadline)
    this.executeEntry = new WeakMap() // record -> its signal when the tools/execute waterfall started
    this.callers = new Map() // call id -> AbortController (direct runs)
    this.inputs = new Map() // call id -> the caller's input object
    this.execs = new Map() // call id -> the execution record the probes saw
    this.execCalls = new WeakMap() // execution record -> call id
    this.observed = new Map() // call id -> the result tools/result observers received
    this.gates = new Map()
    this.loopAgent = null
    this.probes = null
    this.approvalIds = new Map()
    this.messageIds = new Map() // random ids of messages the package made -> generated-1, generated-2, ...
    this.tokenCalls = new Map() // execution token -> call id (a sub-call's parent is its run_code's token)
    this.eventAt = new Map() // loop session seq -> observations recorded before it was appended
    this.classifying = null // the sub-call whose classifier runs now
    this.origins = new WeakMap() // decoded object -> the wire form the scenario wrote
    this.kept = new Map() // `keep` steps: name -> the very object (P63)
    this.getters = new Map((scenario.getters ?? []).map((g) => [g.id, g]))
    this.deferred = [] // agent/pre-step listeners registered when the tool step starts (loop.mjs)
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
    if (Array.isArray(wire)) {
      let out = null
      wire.forEach((item, i) => {
        const next = this.renumberMessages(item)
        if (next !== item) (out ??= [...wire])[i] = next
      })
      return out ?? wire
    }
    let out = null
    for (const [key, item] of Object.entries(wire)) {
      const next = key === 'id' && wire.role === 'user' && typeof item === 'string' && UUID.test(item)
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
   * synchronous participant (stage `getter`), attributed to no call (oracle/run.py
   * WorldRealm: reads are compared per getter).
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

  ctxFor(scope) {
    if (scope === undefined || scope === null) return this.host
    const agent = this.agents.get(scope)
    if (agent === undefined) throw new Unsupported(`unknown agent ${JSON.stringify(scope)}`)
    return agent.ctx
  }

  // ----------------------------------------------------------------------------- registration

  /** (Re-)register a declared tool, listener or guard. The package's throws propagate. */
  register(ref) {
    const d = this.decl.get(ref)
    if (d === undefined) throw this.fault(`no tool, listener or guard has id ${JSON.stringify(ref)}`)
    const { kind, item } = d
    const ctx = this.ctxFor(item.scope)
    let dispose
    if (kind === 'tool') {
      dispose = ctx.tools.register(toolDefinition(this, item))
    } else if (kind === 'guard') {
      dispose = ctx.tools.guard(guardFunction(this, item))
    } else {
      dispose = ctx.on(item.event, listenerFunction(this, item), { prepend: Boolean(item.prepend), global: Boolean(item.global) })
      // The probes stay outermost: a prepended listener goes in front of every earlier one,
      // so the probe is moved in front of it again.
      if (item.prepend) this.probes?.reseat(item.event)
    }
    if (!this.disposers.has(ref)) this.disposers.set(ref, [])
    this.disposers.get(ref).push(dispose)
  }

  unregister(ref) {
    if (!this.decl.has(ref)) throw this.fault(`no tool, listener or guard has id ${JSON.stringify(ref)}`)
    for (const dispose of this.disposers.get(ref) ?? []) dispose()
    this.disposers.set(ref, [])
  }

  // ----------------------------------------------------------------------------- calls

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

  /** Abort "step" (loop runs): the step's signal, as a user's cancel does. */
  stepAbort() {
    const agent = this.loopAgent
    return (...reason) => agent.cancel(reason[0], { keepInbox: true })
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

  /**
   * Name the shipped timeout policy's deadline signal as the oracle does
   * (`deadline:<call>:<virtual ms>`). The policy is the outermost tools/execute listener
   * after the probe and puts its deadline on the record before it calls next(); scenario
   * listeners can only put named signals there. So an unnamed signal a scenario wrapper
   * finds on the record, other than the one the record entered the waterfall with, is the
   * policy's deadline.
   */
  noticeDeadline(exec) {
    if (!this.scenario.timeoutPolicy) return
    const signal = exec.signal
    if (signal === null || typeof signal !== 'object' || signal === this.executeEntry.get(exec) || this.signalNames.has(signal)) return
    for (const controller of this.named.values()) if (controller.signal === signal) return
    this.signalNames.set(signal, `deadline:${this.callOf(exec)}:${this.clock.now}`)
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
