// Running one scenario against the real packages: a fresh cordis Context, the real
// registrations, the probes, then the direct calls or the loop's tool step. Returns the
// trace (oracle/trace.py's language, portable part only).

import {
  AgentLoop, AgentRegistry, CodeRuntime, Context, HarnessError, LlmRuntime, SessionId, SessionStore, SystemPrompt, TimeoutPolicy, ToolRuntime,
  bindScopeParent, createScope, snapshotJsonValue,
} from './compat.mjs'
import { Clock, settle } from './clock.mjs'
import { codeRuntimePlugin } from './code-runtime.mjs'
import { checkFeatures } from './features.mjs'
import { Unsupported } from './faults.mjs'
import { ScriptedModel, instrumentScheduler, loopEvents, runLoop, eventData } from './loop.mjs'
import { approvalPlugin, toolDefinition } from './participants.mjs'
import { installProbes } from './probes.mjs'
import { present } from './viewer.mjs'
import { World } from './world.mjs'

export const REALM = { HarnessError }

/**
 * The trace of `scenario` on the real package.
 * @throws {Unsupported} a feature the adapter cannot express (answer `skipped`).
 * @throws {AdapterFault|Error} the run broke (answer `errored`).
 */
export async function runScenario(scenario) {
  checkFeatures(scenario)
  const clock = new Clock()
  const w = new World(scenario, REALM, clock)
  const restore = clock.install()
  const ctx = new Context()
  try {
    await settle(drive(w, ctx, scenario), clock)
  } finally {
    restore()
    dispose(ctx)
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

function dispose(ctx) {
  try {
    const done = ctx.fiber?.dispose?.()
    if (done && typeof done.catch === 'function') done.catch(() => {})
  } catch { /* a broken teardown must not break the next run */ }
}

async function drive(w, ctx, scenario) {
  const run = scenario.run
  const loop = run.kind === 'loop'
  ctx.logger.exporter({
    levels: { default: 2 },
    export: (message) => {
      if (message.type === 'warn') w.trace.warnings.push(message.args.map((a) => (typeof a === 'string' ? a : String(a))).join(' '))
    },
  })
  if (loop) {
    await ctx.plugin(LlmRuntime)
    await ctx.plugin(SessionStore)
  }
  await ctx.plugin(SystemPrompt)
  // Code Mode (section 5.15): the deployment's mode and overlap cap are the real
  // configuration; the code runtime is the scenario's scripted one (lib/code-runtime.mjs).
  if (scenario.codeRuntime !== false && CodeRuntime !== null) await ctx.plugin(codeRuntimePlugin(w))
  await ctx.plugin(ToolRuntime, { mode: scenario.mode ?? 'native', maxParallelSubCalls: scenario.maxParallelSubCalls ?? 10 })
  if (scenario.approval) {
    const { plugin, config } = approvalPlugin(w, scenario.approval)
    await ctx.plugin(plugin, config)
  }
  // P70: the shipped timeout policy is a plugin's tools/execute listener, installed before
  // the scenario's own listeners.
  if (scenario.timeoutPolicy) await ctx.plugin(TimeoutPolicy)
  if (loop) {
    await ctx.plugin(AgentRegistry)
    await ctx.plugin(AgentLoop, { agents: [], maxParallelToolCalls: run.maxParallelToolCalls ?? 10 })
    ctx.llm.registerAdapter(['scripted'], new ScriptedModel(run.blocks ?? [], run.finish ?? 'tool-calls'))
  }
  await ctx.plugin({ name: 'dsh-conformance-adapter', inject: ['tools'], apply(c) { w.host = c } })
  if (w.host === null || ctx.tools === undefined) throw new Error('the tool runtime did not start')

  const loopAgent = makeAgents(w, ctx, scenario)
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
  // The loop and the run_code bridge drive calls through the staged scheduler: it tells
  // which call each stage runs for, and the sub-calls' final results.
  instrumentScheduler(w, ctx.tools)

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
 * creates; the others (in a direct run, all) are stand-ins with a session that records
 * what the shipped approval service appends (the upstream specs use the same stand-in).
 */
function makeAgents(w, ctx, scenario) {
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
      const agent = ctx.agentLoop.create(SessionId(`dsh-conformance-${id}`), { provider: 'scripted', model: 'scripted' })
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
