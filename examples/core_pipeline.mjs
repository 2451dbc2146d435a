// A minimal JavaScript implementation of the pipeline's `core`, `reference` and `code-mode`
// profiles, written on the JS kit.
//
// THIS IS AN EXAMPLE OF THE JS KIT (the `kit/` that `dsh-conformance kit js DIR` writes),
// NOT A SECOND ORACLE. It is examples/core_pipeline.py, stage for stage, in JavaScript: the
// same registry, entry, gate, approval, guards, dispatch, output contract, post-execute,
// materialization, finalizer and notification, with the reference profile's texts, and Code
// Mode's run_code bridge on the kit's program interpreter (kit/program.mjs), so that the two
// examples, each on its own kit, give the same answers on every scenario
// (`dsh-conformance kit agree`: any difference is a difference of the kits, or of the
// examples). What is left out, as in the Python one: the loop and the timeout policy.
//
//   dsh-conformance run --impl "node examples/core_pipeline.mjs" --profiles core,reference
//   dsh-conformance run --impl "node examples/core_pipeline.mjs" --profiles code-mode
//
// It is itself the binding: it finds the JS kit beside it (DSH_KIT_DIR, or the kit of the
// installed suite, or tools/dsh-adapter/kit of a clone) and serves the protocol.

import path from 'node:path'
import { existsSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
// examples/ and tools/ are siblings in a clone and in the installed package alike.
const KIT = [process.env.DSH_KIT_DIR, path.join(here, '..', 'tools', 'dsh-adapter', 'kit')]
  .find((dir) => dir && existsSync(path.join(dir, 'protocol.mjs')))
if (KIT === undefined) throw new Error('core_pipeline.mjs: no JS kit found (set DSH_KIT_DIR to a kit/ directory)')
const kit = async (name) => import(pathToFileURL(path.join(KIT, name)).href)
const { Unsupported } = await kit('faults.mjs')
const { KIT_VERSION } = await kit('version.mjs')
const { guardFunction, listenerFunction, toolFunctions, approvalRequest } = await kit('participants.mjs')
const { runProgram } = await kit('program.mjs')

// ----------------------------------------------------------------------------- pipeline logic

const FINAL = 'final'
const POST = 'post'
const DISPATCH = 'dispatch'
const OUTCOMES = ['allowed-once', 'rejected', 'cancelled', 'unavailable']
const PRE_REASONS = { allow: 'ignored', deny: 'string', ask: 'absent-or-string' }
const UNPRINTABLE = '<unprintable thrown value>'
const IDENTITY = ['callId', 'rootCallId', 'name', 'agent', 'parent', 'arguments', 'token']

export class HarnessError extends Error {
  constructor(message, code, options) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}
const HARNESS = new Map()
function harnessError(cls, code, message) {
  if (!HARNESS.has(cls)) HARNESS.set(cls, { [cls]: class extends HarnessError {} }[cls])
  return new (HARNESS.get(cls))(message, code)
}

// What the snapshot throws for a value that is not lossless JSON: told apart by identity,
// since `instanceof` on a thrown hostile value would itself throw.
const NOT_LOSSLESS = Symbol('not lossless')
const notLossless = () => { throw NOT_LOSSLESS } // eslint-disable-line no-throw-literal

const get = (v, key) => (v === null || v === undefined ? undefined : v[key])
const isObject = (v) => v !== null && (typeof v === 'object' || typeof v === 'function')
/** JSON.stringify, its circular-structure TypeError without V8's lines on where the circle closes. */
function jsonText(v) {
  try {
    return JSON.stringify(v)
  } catch (e) {
    if (e instanceof TypeError && e.message.startsWith('Converting circular structure to JSON')) throw new TypeError('Converting circular structure to JSON')
    throw e
  }
}
const toStr = (v) => `${v}` // ToString (a symbol throws), as the template literal does

function failure(message, name, code) {
  const error = { message }
  if (name !== undefined) error.info = { name, code }
  return { isError: true, error, content: [{ type: 'text', text: 'Error: ' + message }] }
}

function infoOf(x) {
  try {
    if (!(x instanceof HarnessError)) return null
    const name = x.name
    return { name, code: x.code }
  } catch {
    return null
  }
}

function messageValue(x) {
  try {
    if (x instanceof Error || x instanceof DOMException) return x.message
    if (isObject(x) && Object.hasOwn(x, 'message')) {
      const m = x.message
      if (typeof m === 'string') return m
    }
    return String(x)
  } catch {
    return UNPRINTABLE
  }
}

function messageOf(x) {
  const m = messageValue(x)
  if (typeof m === 'string') return m
  try {
    return toStr(m)
  } catch {
    return UNPRINTABLE
  }
}

/** The canonical failure of a thrown value (P8). */
function fail(x) {
  const info = infoOf(x)
  const m = messageValue(x)
  const error = info === null ? { message: m } : { message: m, info }
  return { isError: true, error, content: [{ type: 'text', text: 'Error: ' + toStr(m) }] }
}

function aborted(beforeDispatch, prior) {
  const r = beforeDispatch ? failure('tool call aborted before dispatch', 'AbortError', 'ABORTED_BEFORE_DISPATCH')
    : failure('tool call aborted', 'AbortError', 'ABORTED')
  const contexts = prior === undefined ? undefined : get(prior, 'additionalContexts')
  if (Array.isArray(contexts) && contexts.length > 0) r.additionalContexts = contexts
  return r
}

/** The detached lossless-JSON snapshot of a value (P12, P13); throws NotLossless, or what a read throws. */
function snapshot(v, stack = []) {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || Object.is(v, -0)) notLossless()
    return v
  }
  if (typeof v !== 'object' || stack.includes(v)) notLossless()
  const proto = Object.getPrototypeOf(v)
  if (Array.isArray(v)) {
    const keys = Reflect.ownKeys(v)
    if (proto !== Array.prototype || keys.length !== v.length + 1) notLossless() // holes, extras
    const items = []
    for (let i = 0; i < v.length; i++) items.push(snapshot(v[i], [...stack, v])) // each element read once
    return items
  }
  if (proto !== Object.prototype && proto !== null) notLossless()
  const keys = Reflect.ownKeys(v)
  if (keys.some((k) => typeof k === 'symbol' || !Object.getOwnPropertyDescriptor(v, k).enumerable)) notLossless()
  const out = {}
  for (const k of keys) Object.defineProperty(out, k, { value: snapshot(v[k], [...stack, v]), writable: true, enumerable: true, configurable: true })
  return out
}

/** The registry's deepFreeze: data properties only (an accessor is not read); what refuses is left. */
function freeze(v, seen = new Set()) {
  if (!isObject(v) || seen.has(v)) return v
  seen.add(v)
  try {
    Object.freeze(v)
    for (const k of Reflect.ownKeys(v)) {
      const d = Object.getOwnPropertyDescriptor(v, k)
      if ('value' in d) freeze(d.value, seen)
    }
  } catch { /* a hostile value refuses every operation */ }
  return v
}

const UNPRINTABLE_CHAR = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u

// Python's repr of JSON values, as jsonschema words its messages (examples/core_pipeline.py).
function repr(v) {
  if (v === null) return 'None'
  if (v === true) return 'True'
  if (v === false) return 'False'
  if (typeof v === 'number') {
    const t = JSON.stringify(v)
    if (!/[e.]/.test(t)) return t
    const m = /^(-?[\d.]+)e([+-])(\d+)$/.exec(String(v))
    return m ? `${m[1]}e${m[2]}${m[3].padStart(2, '0')}` : String(v)
  }
  if (typeof v === 'string') {
    const q = v.includes("'") && !v.includes('"') ? '"' : "'"
    const hex = (n, width) => n.toString(16).padStart(width, '0')
    const body = [...v].map((c) => {
      if (c === q || c === '\\') return '\\' + c
      if (c === '\n') return '\\n'
      if (c === '\t') return '\\t'
      if (c === '\r') return '\\r'
      if (c === ' ' || !UNPRINTABLE_CHAR.test(c)) return c // str.isprintable
      const n = c.codePointAt(0)
      return n < 0x100 ? '\\x' + hex(n, 2) : n < 0x10000 ? '\\u' + hex(n, 4) : '\\U' + hex(n, 8)
    }).join('')
    return q + body + q
  }
  if (Array.isArray(v)) return '[' + v.map(repr).join(', ') + ']'
  return '{' + Object.entries(v).map(([k, x]) => `${repr(k)}: ${repr(x)}`).join(', ') + '}'
}

const TYPES = {
  object: (v) => isObject(v) && !Array.isArray(v),
  array: Array.isArray,
  integer: (v) => typeof v === 'number' && Number.isInteger(v),
  number: (v) => typeof v === 'number',
  string: (v) => typeof v === 'string',
  boolean: (v) => typeof v === 'boolean',
  null: (v) => v === null,
}

/**
 * P73, P75: the schema's violations (type, properties, required, items and additionalProperties:
 * what scenarios and run_code's output contract use) in
 * jsonschema's wording, each as `<label><path>: <message>`, by path, then keyword.
 */
function violations(schema, value, label) {
  if (schema === true || (isObject(schema) && Object.keys(schema).length === 0)) return []
  const text = JSON.stringify(value)
  const v = text === undefined ? value : JSON.parse(text)
  const found = []
  const walk = (s, x, path) => {
    for (const [key, rule] of Object.entries(s)) {
      if (key === 'type') {
        const types = Array.isArray(rule) ? rule : [rule]
        if (!types.some((t) => TYPES[t]?.(x))) found.push({ path, key, message: `${repr(x)} is not of type ${types.map(repr).join(', ')}` })
      } else if (key === 'properties' && TYPES.object(x)) {
        for (const [p, sub] of Object.entries(rule)) if (Object.hasOwn(x, p)) walk(sub, x[p], [...path, p])
      } else if (key === 'required' && TYPES.object(x)) {
        for (const p of rule) if (!Object.hasOwn(x, p)) found.push({ path, key, message: `${repr(p)} is a required property` })
      } else if (key === 'items' && Array.isArray(x) && isObject(rule)) {
        x.forEach((item, i) => walk(rule, item, [...path, i]))
      } else if (key === 'additionalProperties' && rule === false && TYPES.object(x)) {
        const extras = Object.keys(x).filter((p) => !Object.hasOwn(s.properties ?? {}, p)).sort()
        const verb = extras.length === 1 ? 'was' : 'were'
        if (extras.length > 0) found.push({ path, key, message: `Additional properties are not allowed (${extras.map(repr).join(', ')} ${verb} unexpected)` })
      }
    }
  }
  walk(schema, v, [])
  const order = (a, b) => { // Python's ordering of ([path...], keyword)
    for (let i = 0; i < Math.min(a.path.length, b.path.length); i++) if (a.path[i] !== b.path[i]) return a.path[i] < b.path[i] ? -1 : 1
    if (a.path.length !== b.path.length) return a.path.length - b.path.length
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0
  }
  return found.sort(order).map((e) => label + e.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('') + ': ' + e.message)
}

const outputError = (name, why) => harnessError('ToolOutputError', 'INVALID_TOOL_OUTPUT', `tool "${name}" returned invalid output: ${why}`)
const unknownTool = (name) => harnessError('ToolNotFoundError', 'UNKNOWN_TOOL', `unknown tool "${name}"`)
const DENIALS = { // P41
  rejected: (name) => `the user rejected tool "${name}"`,
  cancelled: (name) => `approval for tool "${name}" was cancelled`,
  unavailable: (name) => `tool "${name}" requires approval, but no approval channel is available`,
}

class CorePipeline {
  /** The registry and the stages of one run: entry, gate, dispatch, post, finish. */
  constructor(w) {
    this.w = w
    this.agents = new Map((w.scenario.agents ?? []).map((a) => [a.id, a]))
    this.tools = new Map() // scope -> Map(name -> {item, fns})
    this.listeners = new Map() // event -> [{item, fn}]
    this.guards = new Map() // scope -> [[{item, fn}, active]]
    this.approvals = 0
    this.tokens = 0
    this.generated = 0 // user messages made for image-bearing sub-calls (P126)
    this.runCode = { item: RUN_CODE_ITEM, fns: { render: (_args, value) => renderRun(value) } }
    const approval = w.scenario.approval
    this.approval = approval?.service === 'custom' ? approvalRequest(() => w) : approval ?? null
  }

  // ------------------------------------------------------------- registry (P5, P26, P45, P56)

  register(kind, item) {
    const scope = item.scope ?? null
    if (kind === 'tool') {
      if (item.name === RUN_CODE) throw new Error('run_code is reserved for the Code Mode transport and cannot be registered') // P114
      if (!this.tools.has(scope)) this.tools.set(scope, new Map())
      const layer = this.tools.get(scope)
      if (layer.has(item.name)) {
        const where = scope !== null ? 'in this scope' : "(for a per-agent variant, register through that agent's `agent.ctx` instead)"
        throw new Error(`tool "${item.name}" is already registered ${where}`)
      }
      const entry = { item, fns: toolFunctions(this.w, item) }
      layer.set(item.name, entry)
      return () => { if (layer.get(item.name) === entry) layer.delete(item.name) }
    }
    if (kind === 'listener') {
      if (!this.listeners.has(item.event)) this.listeners.set(item.event, [])
      const table = this.listeners.get(item.event)
      const entry = { item, fn: listenerFunction(this.w, item) }
      if (item.prepend) table.unshift(entry)
      else table.push(entry)
      return () => { const i = table.indexOf(entry); if (i >= 0) table.splice(i, 1) }
    }
    if (!this.guards.has(scope)) this.guards.set(scope, [])
    const entry = [{ item, fn: guardFunction(this.w, item) }, true]
    this.guards.get(scope).push(entry)
    return () => { entry[1] = false } // stays in place: a pass keeps its position
  }

  chain(agent) {
    const out = []
    while (agent !== undefined && agent !== null) {
      out.push(agent)
      agent = this.agents.get(agent)?.parent
    }
    return out
  }

  // P56: the agent's own definition; else the nearest inherited one (ancestors, then the
  // global layer), which a restriction anywhere on the chain hides.
  view(agent, name) {
    if (name === RUN_CODE) return this.mode(agent) !== 'native' ? this.runCode : undefined // P114: outside the layers
    const chain = this.chain(agent)
    const own = chain.length > 0 ? this.tools.get(chain[0])?.get(name) : undefined
    if (own !== undefined) return own
    let tool = this.tools.get(null)?.get(name)
    for (const a of chain.slice(1)) {
      const hit = this.tools.get(a)?.get(name)
      if (hit !== undefined) { tool = hit; break }
    }
    for (const a of chain) {
      const r = this.agents.get(a)?.restrict
      if (tool !== undefined && r && ((r.allow && !r.allow.includes(name)) || (r.deny && r.deny.includes(name)))) return undefined
    }
    return tool
  }

  selected(event, agent) {
    const chain = this.chain(agent)
    return (this.listeners.get(event) ?? []).filter((l) => !l.item.scope || l.item.global || chain.includes(l.item.scope))
  }

  /** P5, P6: the listeners selected now share one consuming cursor down to the terminal. */
  waterfall(event, rec, args, terminal, freezeNext = false) {
    const listeners = this.selected(event, rec.agentId)
    let position = 0
    const step = () => {
      position += 1
      if (position <= listeners.length) return listeners[position - 1].fn(...args, next)
      return terminal()
    }
    const next = async () => {
      const value = await step()
      return freezeNext ? freeze(value) : value
    }
    return step()
  }

  boundary(rec, stage, what, ...value) {
    this.w.obs(rec.call, stage, what, null, value.length === 0 ? null : this.w.enc(value[0]))
  }

  // ------------------------------------------------------------- execute()

  async execute(input) {
    let [rec, route, r] = await this.prepare(input)
    if (route === DISPATCH) [route, r] = await this.dispatch(rec)
    return this.finalize(rec, route, r)
  }

  async prepare(input) { // the staged scheduler (3.6)
    let [rec, route, r] = this.entry(input)
    if (route === null) [route, r] = await this.gate(rec)
    return [rec, route, r]
  }

  async finalize(rec, route, r) {
    if (route === POST) r = await this.post(rec, r)
    return this.finish(rec, r)
  }

  /** P28: the nearest scope's declared mode, else the deployment's. */
  mode(agent) {
    for (const a of this.chain(agent)) if ((this.agents.get(a)?.mode ?? null) !== null) return this.agents.get(a).mode
    return this.w.scenario.mode ?? 'native'
  }

  /** P28: a model-direct call of an agent presenting in `code` mode, to any tool but run_code, never runs. */
  collapses(agent, name, nested) {
    return !nested && this.mode(agent) === 'code' && name !== RUN_CODE
  }

  own(rec, r) {
    rec.built.add(r) // P63: a result the registry built for this execution
    return r
  }

  /** P22-P25: one record per call, a frozen lossless snapshot of the arguments. */
  entry(input) {
    const w = this.w
    // E1, E2 (P23): each input field read once, rootCallId and name before the lookup.
    const callId = input.callId
    const rootCallId = input.rootCallId ?? callId
    const name = input.name
    const agentId = input.agent === undefined ? undefined : w.agentId(input.agent)
    const visible = this.view(agentId, name)
    const collapsed = visible !== undefined && this.collapses(agentId, name, input.parent !== undefined) // P28
    const rec = {
      call: w.currentCall(), agentId, caller: input.signal, built: new Set(), deferred: [], concluded: false, bodyInvoked: false, subCalls: 0,
      finalizer: visible && visible.item.finalizeContent ? visible : undefined,
    }
    // P24: the identity fields never change, and one the record lacks cannot be added.
    let building = true
    const refuse = (t, k, how) => {
      if (!building && IDENTITY.includes(k) && !Object.hasOwn(t, k)) throw new TypeError(`Cannot ${how} property ${k}, object is not extensible`)
    }
    const exec = new Proxy({}, { // strict-mode writes, in V8's words
      set: (t, k, v, r) => {
        refuse(t, k, 'add')
        if (Reflect.set(t, k, v)) return true // on the target itself: its own refusal, not the define trap's
        throw new TypeError(Object.hasOwn(t, k) ? `Cannot assign to read only property '${String(k)}' of object '#<Object>'`
          : `Cannot add property ${String(k)}, object is not extensible`)
      },
      defineProperty: (t, k, d) => {
        refuse(t, k, 'define')
        if (Reflect.defineProperty(t, k, d)) return true
        throw new TypeError(Object.hasOwn(t, k) ? `Cannot redefine property: ${String(k)}` : `Cannot define property ${String(k)}, object is not extensible`)
      },
      deleteProperty: (t, k) => {
        if (Reflect.deleteProperty(t, k)) return true
        throw new TypeError(`Cannot delete property '${String(k)}' of #<Object>`)
      },
    })
    const fixed = (key, value) => Object.defineProperty(exec, key, { value, enumerable: true })
    this.tokens += 1
    fixed('callId', callId)
    fixed('rootCallId', rootCallId)
    fixed('name', name)
    if (input.agent !== undefined) fixed('agent', input.agent)
    if (input.parent !== undefined) fixed('parent', input.parent)
    fixed('token', Symbol(`token-${this.tokens}`))
    exec.signal = input.signal
    exec.deferContext = (message) => { rec.deferred.push(message) }
    exec.concludeTurn = () => { rec.concluded = true }
    rec.exec = exec
    w.adopt(exec)
    try {
      let args
      try {
        args = freeze(snapshot(input.arguments))
      } catch (e) {
        if (!(e === NOT_LOSSLESS)) throw e
        throw new TypeError('tool execution arguments must be losslessly JSON-serializable')
      }
      fixed('arguments', args)
    } catch (e) {
      fixed('arguments', undefined)
      building = false
      if (collapsed && !input.signal.aborted) rec.finalizer = undefined // P28: a collapsed call that could never run keeps no finalizer
      return [rec, FINAL, fail(e)]
    }
    building = false
    if (collapsed && !input.signal.aborted) { // P28
      rec.finalizer = undefined
      return [rec, FINAL, fail(harnessError('ToolNotFoundError', 'UNKNOWN_TOOL',
        `unknown tool "${name}": only \`run_code\` is callable directly \u2014 call \`${name}\` from inside a \`run_code\` program instead`))]
    }
    if (input.signal.aborted) return [rec, FINAL, aborted(true)] // P29
    return [rec, null, null]
  }

  async gate(rec) {
    try {
      return await this.gateStages(rec)
    } catch (e) { // P8: any throw of the gate is a final failure
      return [FINAL, fail(e)]
    }
  }

  async gateStages(rec) {
    this.boundary(rec, 'pre-execute', 'start')
    let d
    try {
      d = await this.waterfall('tools/pre-execute', rec, [rec.exec], async () => ({ kind: 'allow' }))
    } catch (e) { // P34
      this.boundary(rec, 'pre-execute', 'throw', e)
      return [FINAL, fail(e)]
    }
    this.boundary(rec, 'pre-execute', 'end', d)
    let kind = get(d, 'kind') // P31: a well-formed decision
    const rule = typeof kind === 'string' && Object.hasOwn(PRE_REASONS, kind) ? PRE_REASONS[kind] : undefined
    let reason = rule === 'string' || rule === 'absent-or-string' ? get(d, 'reason') : undefined
    if (!(rule === 'ignored' || typeof reason === 'string' || (rule === 'absent-or-string' && reason === undefined))) {
      return [FINAL, fail(new TypeError('invalid tools/pre-execute decision'))]
    }
    if (kind === 'ask') { // P36-P41
      let cancelled
      ;[kind, reason, cancelled] = await this.ask(rec, reason)
      if (cancelled && rec.caller.aborted) return [POST, this.own(rec, freeze(aborted(true)))]
    }
    if (kind === 'allow') reason = this.guardPass(rec) // P44, P46: guards only after an allow
    if (reason !== undefined) { // P32, P33, P47: the denial
      const candidate = { content: [{ type: 'text', text: 'Error: ' + toStr(reason) }], isError: true, error: { message: reason } }
      return [POST, this.own(rec, this.materialize(candidate))]
    }
    if (rec.caller.aborted) return [POST, this.own(rec, freeze(aborted(true)))] // P53
    return [DISPATCH, null]
  }

  async ask(rec, reason) {
    const service = this.approval
    const name = rec.exec.name
    if (service === null) return ['deny', typeof reason === 'string' ? reason : `tool "${name}" requires approval (not yet supported)`, false] // P37, P38
    if (rec.agentId === undefined) return ['deny', `tool "${name}" requires approval, but the call has no agent to route it through`, false]
    const request = { agent: rec.exec.agent, toolName: rec.exec.name, callId: rec.exec.callId }
    if (typeof reason === 'string') request.reason = reason
    request.signal = rec.exec.signal
    const outcome = typeof service === 'function'
      ? await service(request)
      : await this.w.probeApproval(request, () => this.shippedApproval(rec, request, service.policy))
    if (typeof outcome !== 'string' || !OUTCOMES.includes(outcome)) { // P41: JSON.stringify(o) ?? String(o)
      throw new Error(`unreachable variant in ApprovalOutcome: ${jsonText(outcome) ?? String(outcome)}`)
    }
    return [outcome === 'allowed-once' ? 'allow' : 'deny', outcome === 'allowed-once' ? undefined : DENIALS[outcome](name), outcome === 'cancelled']
  }

  /** P43: the shipped service asks the approval/request answerers, with its audit pair. */
  async shippedApproval(rec, request, policy) {
    const agent = this.agents.get(rec.agentId)
    if (agent.openTurn === false) throw new Error('no open turn')
    this.approvals += 1
    const id = `approval-${this.approvals}`
    const { agent: _a, signal, ...asked } = request
    this.appendEvent(rec.agentId, 'approval/asked', { id, ...asked })
    let outcome = signal.aborted ? 'cancelled' : policy === 'never' ? 'rejected' : null
    if (outcome === null) {
      // The abort is listened for before the answerers run: one may abort as it answers.
      const abortedNow = signal.aborted ? Promise.resolve('cancelled')
        : new Promise((resolve) => signal.addEventListener('abort', () => resolve('cancelled'), { once: true }))
      const answered = (async () => {
        let o
        try {
          o = await this.waterfall('approval/request', rec, [request], async () => 'unavailable')
        } catch {
          return 'unavailable'
        }
        return typeof o === 'string' && OUTCOMES.includes(o) ? o : 'unavailable'
      })()
      outcome = await Promise.race([answered, abortedNow])
    }
    this.appendEvent(rec.agentId, 'approval/decided', { id, outcome })
    return outcome
  }

  appendEvent(agentId, type, data) {
    this.w.agents.get(agentId).session.append(type, data)
  }

  /** P45-P50: the global layer, then each scope from the farthest; read live. */
  guardPass(rec) {
    for (const scope of [null, ...this.chain(rec.agentId).reverse()]) {
      if (!this.guards.has(scope)) this.guards.set(scope, [])
      const layer = this.guards.get(scope)
      for (let i = 0; i < layer.length; i++) {
        const [guard, active] = layer[i]
        if (!active) continue
        const v = guard.fn(rec.exec)
        if (v !== undefined) return v
      }
    }
    return undefined
  }

  /** P54-P68: tools/execute around the terminal, then normalization. */
  async dispatch(rec) {
    let n
    try {
      this.boundary(rec, 'execute', 'start')
      let r
      try {
        r = await this.waterfall('tools/execute', rec, [rec.exec], () => this.terminal(rec), true)
      } catch (e) {
        this.boundary(rec, 'execute', 'throw', e)
        throw e
      }
      this.boundary(rec, 'execute', 'end', r)
      n = this.normalize(rec, r)
    } catch (e) {
      return [FINAL, fail(e)]
    }
    if (rec.deferred.length > 0) { // P67
      const contexts = get(n, 'additionalContexts')
      n = this.own(rec, { ...n, additionalContexts: [...rec.deferred, ...(Array.isArray(contexts) ? contexts : [])] })
    }
    if (!n.isError && rec.caller.aborted) n = this.own(rec, aborted(!rec.bodyInvoked, n)) // P68
    return [POST, freeze(n)]
  }

  /** P55, P58-P61: one dispatch of the body; the terminal never throws. */
  async terminal(rec) {
    const exec = rec.exec
    const current = exec.signal
    let fused = current
    let detach = () => {}
    if (rec.caller !== current) {
      const controller = new AbortController()
      fused = controller.signal
      if (current.aborted) controller.abort(current.reason)
      else if (rec.caller.aborted) controller.abort(rec.caller.reason)
      else {
        const relay = (source) => () => { controller.abort(source.reason); detach() }
        const a = relay(rec.caller)
        const b = relay(current)
        rec.caller.addEventListener('abort', a)
        current.addEventListener('abort', b)
        detach = () => { rec.caller.removeEventListener('abort', a); current.removeEventListener('abort', b) }
      }
    }
    if (fused.aborted) return this.own(rec, aborted(true))
    exec.signal = fused
    let res
    try {
      const tool = this.view(rec.agentId, exec.name)
      if (tool === undefined) throw unknownTool(exec.name)
      rec.bodyInvoked = true
      const bad = tool.item.define ? violations(tool.item.parameters ?? {}, exec.arguments, 'arguments') : []
      if (bad.length > 0) throw harnessError('ToolArgsError', 'INVALID_ARGS', 'invalid arguments: ' + bad.join('; ')) // P75
      const v = await (tool === this.runCode ? new CodeRun(this, rec).body() : tool.fns.execute(exec.arguments, exec))
      const s = this.success(rec, tool, v) // P72, P73: the output contract runs before the abort check
      res = fused.aborted ? aborted(false) : s // P61
    } catch (e) {
      res = fail(e)
    } finally {
      detach()
      if (!Object.isFrozen(exec)) exec.signal = current
    }
    return this.own(rec, res)
  }

  /** P72-P74: a value becomes a success through the output contract, or throws. */
  success(rec, tool, candidate) {
    const name = tool.item.name
    let value
    try {
      value = snapshot(candidate)
    } catch (e) {
      throw outputError(name, e === NOT_LOSSLESS ? 'value is not lossless JSON' : `value snapshot failed: ${messageOf(e)}`)
    }
    const bad = violations(tool.item.output?.schema ?? {}, value, 'value')
    if (bad.length > 0) throw outputError(name, bad.join('; '))
    freeze(value)
    const out = { isError: false, value }
    for (const [key, which] of [['content', 'render'], ['meta', 'presentationMeta']]) {
      if (!tool.item.output?.[which]) {
        if (key === 'content') out.content = [{ type: 'text', text: jsonText(value) }]
        continue
      }
      if (key === 'meta' && rec.exec.parent !== undefined) continue
      try {
        out[key] = snapshot(tool.fns[which](rec.exec.arguments, value))
      } catch (e) {
        throw outputError(name, e === NOT_LOSSLESS ? `output.${which} returned non-lossless JSON` : `output.${which} failed: ${messageOf(e)}`)
      }
    }
    if (rec.concluded) out.concludesTurn = true
    return this.own(rec, this.materialize(out))
  }

  /** P63: a wrapper's return value becomes the dispatch result. */
  normalize(rec, r) {
    if (rec.built.has(r)) return r
    if (r === null || r === undefined) throw new TypeError('tools/execute returned no result')
    let n
    if (get(r, 'isError')) n = { isError: true, error: get(r, 'error'), content: get(r, 'content') }
    else {
      const tool = this.view(rec.agentId, rec.exec.name)
      if (tool === undefined) throw unknownTool(rec.exec.name)
      n = { ...this.success(rec, tool, get(r, 'value')) }
    }
    for (const key of n.isError ? ['meta', 'additionalContexts'] : ['additionalContexts']) {
      const v = get(r, key)
      if (v !== undefined) n[key] = v
    }
    return this.own(rec, n)
  }

  async post(rec, r) {
    try {
      return await this.postStages(rec, r)
    } catch (e) { // P86
      return fail(e)
    }
  }

  /** P76-P88: tools/post-execute and its decision. */
  async postStages(rec, r) {
    freeze(r)
    this.boundary(rec, 'post-execute', 'start', r)
    let p
    try {
      p = await this.waterfall('tools/post-execute', rec, [rec.exec, r], async () => ({ kind: 'accept' }))
    } catch (e) {
      this.boundary(rec, 'post-execute', 'throw', e)
      throw e
    }
    this.boundary(rec, 'post-execute', 'end', p)
    if (!(isObject(p) && !Array.isArray(p) && ['accept', 'block'].includes(get(p, 'kind')))) {
      throw new TypeError('invalid tools/post-execute decision')
    }
    let dc = get(p, 'additionalContexts')
    dc = Array.isArray(dc) ? dc : []
    if (get(p, 'kind') === 'block') { // P83, P84
      const feedback = get(p, 'feedback')
      const out = { isError: true, content: feedback, error: { message: blockMessage(feedback) } }
      if (dc.length > 0) out.additionalContexts = dc
      return this.own(rec, out)
    }
    if (Object.hasOwn(p, 'content') && Object.hasOwn(p, 'value')) {
      throw new TypeError('tools/post-execute accept decision cannot replace both value and content')
    }
    const prior = Object.hasOwn(r, 'additionalContexts') ? r.additionalContexts : []
    const merged = [...(Array.isArray(prior) ? prior : []), ...dc] // P85
    let out
    if (Object.hasOwn(p, 'value')) { // P81, P87
      if (r.isError) throw new TypeError('tools/post-execute cannot replace the value of a failed result')
      const tool = this.view(rec.agentId, rec.exec.name)
      if (tool === undefined) throw unknownTool(rec.exec.name) // the value goes through the output contract of a tool that is gone
      out = { ...this.success(rec, tool, get(p, 'value')) }
    } else { // P80
      out = { ...r }
      const content = get(p, 'content')
      if (content !== undefined) out.content = content
    }
    if (merged.length > 0) out.additionalContexts = merged
    if (!out.isError && rec.caller.aborted) out = aborted(!rec.bodyInvoked, out) // P88
    return this.own(rec, out)
  }

  /** P90, P91: a detached, deeply frozen lossless snapshot of the outcome, or a throw. */
  materialize(r) {
    const candidate = { isError: Boolean(get(r, 'isError')) }
    if (candidate.isError) candidate.error = get(r, 'error')
    for (const key of ['content', 'meta', 'additionalContexts']) {
      if (key === 'content' || get(r, key) !== undefined) candidate[key] = get(r, key)
    }
    if (!candidate.isError && get(r, 'concludesTurn') === true) candidate.concludesTurn = true
    const value = get(r, 'value')
    let out
    try {
      out = snapshot(candidate)
    } catch (e) {
      if (e === NOT_LOSSLESS) throw new TypeError('tool result must be losslessly JSON-serializable')
      throw e
    }
    if (!out.isError) out.value = value
    return freeze(out)
  }

  /** P93-P102: materialize, finalizeContent, freeze the record, notify tools/result. */
  finish(rec, r) {
    const w = this.w
    let f
    try {
      f = this.materialize(r)
    } catch (e) {
      f = this.materialize(fail(e))
    }
    if (rec.finalizer !== undefined) { // P26: the definition captured at entry
      try {
        const c = rec.finalizer.fns.finalizeContent(rec.exec, f)
        f = this.materialize(c === undefined ? f : { ...f, content: c })
      } catch (e) {
        f = this.materialize(fail(e))
      }
    }
    Object.freeze(rec.exec) // P99
    w.observed.set(rec.call, f)
    this.boundary(rec, 'result', 'start', f)
    const rejections = []
    for (const l of this.selected('tools/result', rec.agentId)) { // P100: synchronous, contained
      let returned
      try {
        returned = l.fn(rec.exec, f)
      } catch (e) {
        w.trace.warnings.push(`tool "${rec.exec.name}" (${rec.exec.callId}): tools/result observer failed: ${messageOf(e)}`)
        continue
      }
      if (returned instanceof Promise) rejections.push(returned)
    }
    for (const p of rejections) {
      p.catch((x) => w.trace.warnings.push(`tool "${rec.exec.name}" (${rec.exec.callId}): tools/result observer failed: ${messageOf(x)}`))
    }
    return f
  }
}

function blockMessage(feedback) {
  if (!Array.isArray(feedback)) throw new TypeError('block feedback is not an array')
  const parts = []
  for (let i = 0; i < feedback.length; i++) {
    const block = feedback[i]
    if (block === null || block === undefined) throw new TypeError(`Cannot read properties of ${block === null ? 'null' : 'undefined'} (reading 'type')`)
    const kind = isObject(block) ? block.type : undefined
    const text = kind === 'text' ? block.text : undefined
    parts.push(kind === 'text' ? (text === null || text === undefined ? '' : toStr(text)) : `[${toStr(kind)} content]`)
  }
  return parts.join('\n') || 'tool result blocked by post-execute policy'
}

// ----------------------------------------------------------------------------- Code Mode (5.15)

const RUN_CODE = 'run_code'
const RUN_SETTLED = 'run_code settled' // P125: the run signal's abort reason once the program settled
const RUN_CODE_ITEM = { // P114, P115: the reserved transport, a defineTool tool whose body is the bridge
  name: RUN_CODE,
  define: true,
  parameters: { type: 'object', properties: { code: { type: 'string' }, description: { type: 'string' } }, required: ['code', 'description'] },
  output: {
    schema: { type: 'object', additionalProperties: false, required: ['logs'], properties: { logs: { type: 'array', items: { type: 'string' } }, result: {} } },
    render: true,
  },
}
const runOver = (reason, name, what) => new Error(`run_code run is over (${toStr(reason)}); ${name} ${what}`) // P118, P125
const lossless = (v) => { try { snapshot(v); return true } catch { return false } }

function deferred() {
  const d = {}
  d.promise = new Promise((resolve, reject) => { d.resolve = resolve; d.reject = reject })
  return d
}

/** One run of run_code's body: the run's signal, its queue, its lane of starts and commits (P121), its dispatch logs (P122). */
class CodeRun {
  constructor(p, rec) {
    this.p = p
    this.w = p.w
    this.rec = rec
    this.controller = new AbortController() // P119, P125: the run's own signal
    this.signal = this.controller.signal
    this.pending = []
    this.commits = []
    this.inFlight = new Set()
    this.logs = new Map()
    this.exclusive = false
    this.driving = null
    this.wake = null
  }

  async body() {
    const { exec } = this.rec
    const scenario = this.w.scenario
    if (toStr(get(exec.arguments, 'description')).trim() === '') throw new Error('invalid description: expected a non-empty string') // P115
    if (scenario.codeRuntime === false) { // P115
      throw new Error(`dsh-tools: mode "${scenario.mode ?? 'native'}" requires a code runtime \u2014 load a ctx.codeRuntime implementation ` +
        '(e.g. @deepseek-ai/dsh-code-runtime-worker-thread) or set tools mode to "native"')
    }
    const signal = exec.signal
    const relay = () => this.controller.abort(signal.reason) // P125
    signal.addEventListener('abort', relay, { once: true })
    try {
      const names = new Set([null, ...this.p.chain(this.rec.agentId)].flatMap((scope) => [...(this.p.tools.get(scope)?.keys() ?? [])]))
      const functions = Object.create(null) // P117
      for (const n of [...names].sort()) if (this.p.view(this.rec.agentId, n) !== undefined) functions[n] = (raw) => this.call(n, raw)
      const request = { program: String(get(exec.arguments, 'code')), bindings: [{ global: 'tools', functions }], signal: this.signal }
      let result
      try {
        result = await runProgram(this.w, request, (v) => snapshot(v))
      } catch (e) { // a crashed runtime: run() rejected
        await this.drain()
        throw e
      }
      await this.drain()
      if (result.error !== undefined) { // P128
        const captured = result.logs.length > 0 ? '\nCaptured output:\n' + result.logs.join('\n') : ''
        throw harnessError('CodeRunFailedError', 'CODE_RUN_FAILED', `code run failed (${result.error.kind}): ${result.error.message}${captured}`)
      }
      const value = { logs: result.logs }
      if (Object.hasOwn(result, 'value')) value.result = result.value
      return value
    } finally {
      signal.removeEventListener('abort', relay)
    }
  }

  /** P118, P119: an accepted call becomes a sub-call with its own identity. */
  async call(name, raw) {
    const rec = this.rec
    if (this.signal.aborted) throw runOver(this.signal.reason, name, 'not dispatched')
    let dispatched
    try {
      dispatched = snapshot(raw)
    } catch (e) {
      throw new Error(e === NOT_LOSSLESS ? 'tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)'
        : `tool arguments must be lossless JSON: ${messageOf(e)}`)
    }
    rec.subCalls += 1
    const n = rec.subCalls
    const input = { callId: `${rec.exec.callId}:code:${n}`, rootCallId: rec.exec.rootCallId, name, arguments: dispatched }
    if (rec.exec.agent !== undefined) input.agent = rec.exec.agent
    input.parent = rec.exec.token
    input.signal = this.signal
    this.w.inputs.set(input.callId, input) // what a write into "the caller's input" meets (P23)
    // The bridge reads its own copies: the input object is the caller's, which participants may write into (P23).
    const sub = { n, input, callId: input.callId, name, dispatched, logged: snapshot(dispatched), mode: 'exclusive', parked: null, outcome: deferred(), flight: deferred() }
    this.pending.push(sub)
    this.wakeup()
    this.drive()
    const outcome = await sub.outcome.promise
    if (this.signal.aborted) throw runOver(this.signal.reason, name, 'result discarded') // P125
    if (outcome.isError) throw new Error(toStr(outcome.error.message)) // P124
    return outcome.value
  }

  wakeup() {
    const wake = this.wake
    this.wake = null
    if (wake !== null) wake()
  }

  drive() {
    if (this.driving === null) this.driving = this.lane()
    return this.driving
  }

  /** P121: commits in submission order first; a start when the head's mode allows it. */
  async lane() {
    try {
      for (;;) {
        const wake = new Promise((resolve) => { this.wake = resolve })
        if (this.commits.length > 0 && this.commits[0].parked !== null) {
          const head = this.commits.shift()
          await this.commit(head)
          if (head.mode === 'exclusive') this.exclusive = false
          continue
        }
        if (this.pending.length > 0) {
          const head = this.pending[0]
          if (this.signal.aborted) { // P125: queued, never started
            this.pending.shift()
            head.outcome.reject(runOver(this.signal.reason, head.name, 'tool call abandoned'))
            continue
          }
          const mode = this.classify(head)
          const free = mode === 'exclusive' ? this.inFlight.size === 0 : this.inFlight.size < (this.w.scenario.maxParallelSubCalls ?? 10)
          if (!this.exclusive && free) {
            this.exclusive = mode === 'exclusive'
            head.mode = mode
            this.commits.push(this.pending.shift())
            await this.start(head)
            this.inFlight.add(head.n)
            head.flight.promise.then(() => { this.inFlight.delete(head.n); this.wakeup() })
            continue
          }
        }
        if (this.pending.length === 0 && this.commits.length === 0 && this.inFlight.size === 0) return
        await wake
      }
    } finally {
      this.driving = null
      this.wake = null
    }
  }

  /** P19: "parallel" only when the definition's isConcurrencySafe says exactly true. */
  classify(sub) {
    const tool = this.p.view(this.rec.agentId, sub.name)
    if (tool === undefined || tool === this.p.runCode || !tool.item.concurrencySafe) return 'exclusive'
    if (tool.item.define && violations(tool.item.parameters ?? {}, sub.dispatched, 'arguments').length > 0) return 'exclusive'
    const saved = this.w.classifying
    this.w.classifying = sub.callId // the classifier runs for this sub-call
    try {
      return tool.fns.isConcurrencySafe(sub.dispatched) === true ? 'parallel' : 'exclusive'
    } catch {
      return 'exclusive'
    } finally {
      this.w.classifying = saved
    }
  }

  entry(sub) {
    return { rootCallId: this.rec.exec.rootCallId, parentCallId: this.rec.exec.callId, subCallId: sub.callId, name: sub.name, arguments: snapshot(sub.logged) }
  }

  /** P121, P122: the start event, then entry, pre-execute, approval and guards. */
  async start(sub) {
    if (this.rec.agentId !== undefined) this.p.appendEvent(this.rec.agentId, 'tool/code-dispatch-start', this.entry(sub))
    const [rec, route, r] = await this.w.within(sub.callId, () => this.p.prepare(sub.input))
    if (route === DISPATCH) {
      this.w.within(sub.callId, () => this.dispatch(sub, rec)) // bodies overlap (P121)
    } else {
      sub.parked = [rec, route, r]
      sub.flight.resolve()
    }
  }

  async dispatch(sub, rec) {
    sub.parked = [rec, ...await this.p.dispatch(rec)]
    sub.flight.resolve()
  }

  /** P121, P124, P126, P127: post-execute, finalizeContent, tools/result, the contexts carried to run_code's record, the binding settled, then the dispatch log. */
  async commit(sub) {
    const cid = sub.callId
    const result = await this.w.within(cid, () => this.p.finalize(...sub.parked))
    this.w.recordResult(cid, result)
    if (!result.isError && result.content.some((b) => get(b, 'type') === 'image')) { // P126
      this.p.generated += 1
      this.rec.deferred.push(freeze({ content: result.content, source: { kind: 'plugin', plugin: 'tools-code-mode' }, role: 'user', id: `generated-${this.p.generated}` }))
    }
    this.rec.deferred.push(...(result.additionalContexts ?? []))
    if (result.concludesTurn === true) this.rec.concluded = true // P127
    sub.outcome.resolve(result) // P124
    if (this.rec.agentId !== undefined) {
      const task = this.log(sub, result)
      this.logs.set(sub.n, task)
      task.then(() => this.logs.delete(sub.n))
    }
    while (this.logs.size > (this.w.scenario.maxParallelSubCalls ?? 10)) await Promise.race(this.logs.values())
  }

  /** P122, P123: the tools/code-dispatch-log waterfall, then the tool/code-dispatch event. */
  async log(sub, result) {
    const content = result.content
    const handed = { subCallId: sub.callId, name: sub.name, isError: result.isError, content, exec: this.rec.exec }
    let logged
    try {
      logged = await this.p.waterfall('tools/code-dispatch-log', this.rec, [handed], async () => content)
    } catch (e) { // P123: contained
      this.w.trace.warnings.push(`tools: code-dispatch-log listener failed for ${sub.name}: ${messageOf(e)}; logging the original settled content`)
      logged = content
    }
    if (lossless(logged)) this.p.appendEvent(this.rec.agentId, 'tool/code-dispatch', { ...this.entry(sub), isError: result.isError, content: logged })
  }

  /** P125: once run() settled, queued sub-calls are abandoned and started ones commit, every dispatch log appended, before the body returns. */
  async drain() {
    this.controller.abort(RUN_SETTLED)
    await this.drive()
    while (this.logs.size > 0) for (const task of [...this.logs.values()]) await task
  }
}

/** P128: the logs and the result (a string as it is, else JSON.stringify(result, null, 2)). */
function renderRun(value) {
  const parts = [value.logs.join('\n')]
  if (Object.hasOwn(value, 'result')) parts.push(typeof value.result === 'string' ? value.result : renderJson(value.result))
  return [{ type: 'text', text: parts.filter((p) => p).join('\n') || '(run_code completed with no output)' }]
}

/** JSON.stringify(v, null, 2), but a container whose children would be indented by more than ten spaces is written without white space (P128). */
function renderJson(v, depth = 0, compact = false) {
  if (v === null || typeof v !== 'object') return JSON.stringify(v)
  compact ||= (depth + 1) * 2 > 10
  const list = Array.isArray(v)
  const items = list ? v.map((x) => renderJson(x, depth + 1, compact))
    : Object.keys(v).map((k) => JSON.stringify(k) + (compact ? ':' : ': ') + renderJson(v[k], depth + 1, compact))
  const [open, close] = list ? ['[', ']'] : ['{', '}']
  if (items.length === 0) return open + close
  if (compact) return open + items.join(',') + close
  return `${open}\n${items.map((i) => '  '.repeat(depth + 1) + i).join(',\n')}\n${'  '.repeat(depth)}${close}`
}

// ----------------------------------------------------------------------------- end of pipeline logic

// The binding: the seams the kit calls (kit/README.md), each handing over to the pipeline.
export const implementation = () => ({ name: 'core-pipeline-example-js', version: KIT_VERSION, language: 'javascript' })
export const profiles = () => ['core', 'reference', 'code-mode']
export const features = () => ['direct', 'virtual-time']
export const cannotDrive = () => null
export const realm = () => ({ HarnessError })

export function unsupported(s) {
  if (s.run.kind !== 'direct') return 'loop runs: this port drives direct calls only'
  if (s.timeoutPolicy) return 'the timeout policy is outside this example'
  return null
}

export async function open(w) {
  return new CorePipeline(w)
}

export async function prepare(w, pipeline) {
  w.example = pipeline
  for (const a of w.scenario.agents ?? []) {
    const key = { id: a.id }
    w.addAgent(a.id, key, { session: session(w, a.id) })
  }
  w.registerDeclared()
}

function session(w, agentId) {
  let seq = 0
  return {
    append(type, data) {
      seq += 1
      w.trace.events.push({ agent: agentId, seq, type, data: w.enc(data), sourceEventSeqs: null, at: w.trace.observations.length })
    },
  }
}

export const register = (w, kind, item) => w.example.register(kind, item)
export const execute = (w, pipeline, input) => pipeline.execute(input)
export async function runLoop() { throw new Unsupported('loop runs: this port drives direct calls only') }
export async function leave() {}
export function release() {}

export function dispatchIntent(w, event, target, exec) {
  const p = w.example
  const rec = { agentId: exec.agent === undefined ? undefined : w.agentId(exec.agent) }
  return p.waterfall(event, rec, [target, exec], async () => undefined)
}

export function appendEvent(w, exec, type, data) {
  w.example.appendEvent(w.agentId(exec.agent), type, data)
}

export function agentMessage() { throw new Unsupported('no agent loop here') }
export function cancelAgent() { throw new Unsupported('no agent loop here') }

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { serve } = await kit('protocol.mjs')
  serve({
    implementation, profiles, features, cannotDrive, realm, unsupported, open, prepare, register, execute, runLoop,
    leave, release, dispatchIntent, appendEvent, agentMessage, cancelAgent,
  })
}
