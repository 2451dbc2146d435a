// Running one scenario against the real packages: a deployment of the real plugins for
// the scenario's configuration (lib/deployment.mjs: loaded once, reused while runs end
// cleanly), the real registrations and the probes in a fork of it, then the direct calls
// or the loop's tool step. Returns the trace (oracle/trace.py's language, portable part
// only).

import { HarnessError, SessionId, bindScopeParent, createScope, snapshotJsonValue } from './compat.mjs'
import { Clock, settle } from './clock.mjs'
import { Deployments } from './deployment.mjs'
import { checkFeatures } from './features.mjs'
import { Unsupported } from './faults.mjs'
import { ScriptedModel, loopEvents, runLoop, eventData } from './loop.mjs'
import { toolDefinition } from './participants.mjs'
import { installProbes } from './probes.mjs'
import { present } from './viewer.mjs'
import { World } from './world.mjs'

export const REALM = { HarnessError }

const deployments = new Deployments()

/**
 * The trace of `scenario` on the real package.
 * @throws {Unsupported} a feature the adapter cannot express (answer `skipped`).
 * @throws {AdapterFault|Error} the run broke (answer `errored`).
 */
export async function runScenario(scenario) {
  checkFeatures(scenario)
  const clock = new Clock()
  const w = new World(scenario, REALM, clock)
  const held = await deployments.acquire(scenario)
  if (held.deployment === null) throw new Error('the tool runtime did not start')
  const restore = clock.install()
  let clean = false
  try {
    let fiber = null
    try {
      await settle(drive(w, held.deployment, scenario, (f) => { fiber = f }), clock)
    } finally {
      // The scenario's fork goes, with every registration made through it.
      await settle(held.deployment.leave(fiber), clock)
    }
    clean = w.fatal === null
  } finally {
    restore()
    deployments.release(held, clean)
  }
  if (w.fatal !== null) throw w.fatal
  return {
    $format: 'dsh-conformance/trace/v1',
    scenario: scenario.id ?? null,
    observations: w.trace.observations,
    events: w.trace.events,
    results: w.trace.results,
    warnings: w.trace.warnings,
  }
}

async function drive(w, deployment, scenario, forked) {
  const run = scenario.run
  const loop = run.kind === 'loop'
  const fiber = deployment.enter(w)
  forked(fiber)
  await fiber
  if (w.host === null) throw new Error('the tool runtime did not start')
  const ctx = deployment.ctx
  w.host.logger.exporter({
    levels: { default: 2 },
    export: (message) => {
      if (message.type === 'warn') w.trace.warnings.push(message.args.map((a) => (typeof a === 'string' ? a : String(a))).join(' '))
    },
  })
  if (loop) w.host.llm.registerAdapter(['scripted'], new ScriptedModel(run.blocks ?? [], run.finish ?? 'tool-calls'))

  const loopAgent = makeAgents(w, deployment, scenario)
  // Every tool definition is built once up front, so that one the adapter cannot express
  // is a skip here and not a participant throw in the middle of a run.
  for (const t of scenario.tools ?? []) toolDefinition(w, t)
  for (const [ref, { item }] of w.decl) {
    if (item.registered === false) continue
    // agent/pre-step listeners join at the tool step (loop.mjs): the first step's boundary
    // is the harness's, before the scenario's window (oracle/scenario.py Listener).
    if (item.event === 'agent/pre-step') {
      if (loop) w.deferred.push(ref)
      continue
    }
    try {
      w.register(ref)
    } catch (e) {
      if (e instanceof Unsupported) throw e
      throw new Unsupported(`the package refuses the registration of ${JSON.stringify(ref)} (registration-time validation is out of scope, spec 1.3): ${e?.message ?? e}`)
    }
  }
  for (const a of scenario.agents ?? []) {
    if (a.mode === undefined || a.mode === null) continue
    try {
      w.agents.get(a.id).ctx.tools.presentAs(a.mode) // P28: the scope's own presentation
    } catch (e) {
      throw new Unsupported(`the package refuses the presentation mode of agent ${JSON.stringify(a.id)}: ${e?.message ?? e}`)
    }
  }
  for (const a of scenario.agents ?? []) {
    if (!a.restrict) continue
    const filter = {}
    if (a.restrict.allow) filter.allow = a.restrict.allow
    if (a.restrict.deny) filter.deny = a.restrict.deny
    try {
      w.agents.get(a.id).ctx.tools.restrict(filter)
    } catch (e) {
      throw new Unsupported(`the package refuses the restriction of agent ${JSON.stringify(a.id)} (registration-time validation is out of scope, spec 1.3): ${e?.message ?? e}`)
    }
  }
  w.probes = installProbes(w, w.host)

  if (loop) {
    await runLoop(w, loopAgent, run)
    w.trace.events.push(...loopEvents(w, run.agent, loopAgent.session.events))
    if (run.present) present(w, ctx.tools, loopAgent)
    return
  }
  for (const call of run.calls) {
    const controller = new AbortController()
    w.callers.set(call.callId, controller)
    if (call.aborted) controller.abort()
    const input = {
      callId: call.callId,
      name: call.name,
      arguments: w.dec(call.arguments === undefined ? {} : call.arguments),
      signal: controller.signal,
    }
    if (call.agent !== undefined && call.agent !== null) {
      const agent = w.agents.get(call.agent)
      if (agent === undefined) throw w.fault(`$.run.calls: unknown agent ${JSON.stringify(call.agent)}`)
      input.agent = agent.key
    }
    if (call.rootCallId !== undefined && call.rootCallId !== null) input.rootCallId = call.rootCallId
    if (call.parent) input.parent = Symbol('foreign execution token')
    // P23: input fields run by getters are accessors of the input object itself.
    for (const [field, id] of Object.entries(call.getters ?? {})) {
      Object.defineProperty(input, field, { get: w.getterFunction(id), enumerable: true, configurable: true })
    }
    w.inputs.set(call.callId, input)
    // The caller's own timer (call.abortAt), dropped once execute() resolved.
    const timer = call.abortAt === undefined || call.abortAt === null ? null : setTimeout(() => controller.abort(), call.abortAt)
    const result = await w.within(call.callId, () => ctx.tools.execute(input))
    if (timer !== null) clearTimeout(timer)
    w.recordResult(call.callId, result)
  }
}

/**
 * Make the scenario's agents, parents first. Each is a scope key (dsh-scope) with a scoped
 * context for its registrations. In a loop run the loop agent is the real agent the loop
 * creates, owned by the scenario's fork (its session id names the deployment's run, as a
 * session of an earlier run may still be draining); the others (in a direct run, all) are
 * stand-ins with a session that records what the shipped approval service appends (the
 * upstream specs use the same stand-in).
 */
function makeAgents(w, deployment, scenario) {
  const specs = new Map((scenario.agents ?? []).map((a) => [a.id, a]))
  const run = scenario.run
  let loopAgent = null
  const make = (id, seen = new Set()) => {
    if (w.agents.has(id)) return w.agents.get(id)
    const spec = specs.get(id)
    if (spec === undefined) throw new Unsupported(`unknown agent ${JSON.stringify(id)}`)
    if (seen.has(id)) throw new Unsupported(`the parent chain of agent ${JSON.stringify(id)} has a cycle`)
    seen.add(id)
    const parent = spec.parent === undefined || spec.parent === null ? undefined : make(spec.parent, seen).key
    let entry
    if (run.kind === 'loop' && id === run.agent) {
      const agent = w.host.agentLoop.create(SessionId(`dsh-conformance-${id}-${deployment.runs}`), { provider: 'scripted', model: 'scripted' })
      if (parent !== undefined) bindScopeParent(agent, parent)
      loopAgent = agent
      entry = { id, key: agent, ctx: agent.ctx, session: agent.session }
    } else {
      const key = { id }
      key.session = standInSession(w, id, spec.openTurn !== false)
      entry = { id, key, ctx: createScope(w.host, key, parent === undefined ? undefined : { parent }).ctx, session: key.session }
    }
    w.agents.set(id, entry)
    w.agentIds.set(entry.key, id)
    return entry
  }
  for (const id of specs.keys()) make(id)
  if (run.kind === 'loop' && loopAgent === null) throw new Unsupported(`$.run.agent: unknown agent ${JSON.stringify(run.agent)}`)
  return loopAgent
}

function standInSession(w, agentId, openTurn) {
  const events = openTurn ? [{ seq: 0, type: 'turn/start', data: { turn: 1 } }] : []
  let seq = 0
  return {
    events,
    append(type, data, options) {
      // As the real session does, data that is not lossless JSON is refused.
      const snapshot = snapshotJsonValue(data)
      if (snapshot === undefined) throw new Error(`session event "${type}" carries non-JSON-serializable data`)
      seq += 1
      const event = { seq, type, data, ...(options?.sourceEventSeqs ? { sourceEventSeqs: options.sourceEventSeqs } : {}) }
      events.push(event)
      w.trace.events.push({
        agent: agentId, seq, type, data: eventData(w, type, data), sourceEventSeqs: options?.sourceEventSeqs ?? null,
        at: w.trace.observations.length,
      })
      return event
    },
  }
}
