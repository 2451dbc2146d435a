// The DSH binding: the JS kit's seams (the skeleton `dsh-conformance kit js` writes) filled in
// for the real @deepseek-ai/dsh-tools (pinned at 0.1.0-rc.8; other versions and working trees
// through lib/compat.mjs) and @deepseek-ai/dsh-agent-loop. The kit (kit/) interprets the
// scenario, runs the scripted participants and the Code Mode programs, keeps virtual time and
// speaks the protocol; this module is everything that knows the packages.
//
// Its helpers: lib/compat.mjs (the packages and what a version lacks), lib/deployment.mjs (the
// plugins loaded once per configuration, a fork per scenario), lib/registrations.mjs (the
// kit's scripted functions as ToolDefinitions, defineTool tools and approval services),
// lib/probes.mjs (the stage boundaries), lib/loop.mjs (the agent loop with a scripted
// model), lib/viewer.mjs (run.present), lib/code-runtime.mjs (the kit's program interpreter
// as `ctx.codeRuntime`).
//
// A seam's world `w` is the kit's World (kit/world.mjs); this binding keeps its own state of
// a run on it: `w.host` (the scenario's fork of the deployment, which injects the services),
// `w.probes` (kit/probes.mjs on it: lib/probes.mjs) and `w.deferred` (agent/pre-step
// listeners registered when the tool step starts).

import { createRequire } from 'node:module'
import {
  FATAL, HarnessError, PROFILES, SessionId, TOOLS_VERSION, bindScopeParent, createScope, features as available,
  packageVersions, snapshotJsonValue, versionGaps,
} from './lib/compat.mjs'
import { loopEvents, eventData } from './kit/events.mjs'
import { Unsupported } from './kit/faults.mjs'
import { guardFunction, listenerFunction } from './kit/participants.mjs'
import { Deployments } from './lib/deployment.mjs'
import { runLoop as runToolStep, scriptedModel } from './lib/loop.mjs'
import { installProbes } from './lib/probes.mjs'
import { toolDefinition } from './lib/registrations.mjs'
import { present } from './lib/viewer.mjs'

const require = createRequire(import.meta.url)
const self = require('./package.json')
const deployments = new Deployments()

// ------------------------------------------------------------------------------- handshake

/** The handshake's `implementation`: who is under test (name, version, language, and anything else it names). */
export function implementation() {
  const { agentLoop, ...others } = packageVersions()
  return {
    name: '@deepseek-ai/dsh-tools',
    version: TOOLS_VERSION,
    language: 'javascript',
    homepage: 'https://github.com/deepseek-ai/deepseek-harness',
    agentLoop,
    adapter: `${self.name} ${self.version}`,
    node: process.version,
    ...(process.env.DSH_ADAPTER_SOURCE ? { source: process.env.DSH_ADAPTER_SOURCE } : {}),
    // What was run, from the suite's side: the packages' versions and built-code digests, and for
    // a working tree its commit and dirty flag (conformance/dsh/tree.py).
    ...(process.env.DSH_ADAPTER_TREE ? { build: JSON.parse(process.env.DSH_ADAPTER_TREE) } : {}),
    packages: others,
  }
}

/** The handshake's profiles: those the installed package set supports. */
export function profiles() {
  return PROFILES
}

/** The handshake's features, less those the installed set lacks. */
export function features() {
  return available(['direct', 'loop', 'shipped-approval', 'custom-approval', 'timeout-policy', 'define-tool', 'virtual-time',
    'lone-surrogates', 'getters', 'shared-objects', 'error-shapes', 'kept-results', 'timed-aborts', 'cancel', 'next-turn',
    'pre-step', 'code-mode', 'scripted-code-runtime'])
}

/** Why the installed package set cannot be driven at all (one line: the adapter exits 3), or null. */
export function cannotDrive() {
  return FATAL
}

// ------------------------------------------------------------------------------- a run

/** Why this set cannot run `scenario` (it is answered `skipped`), or null. */
export function unsupported(s) {
  // Only the shipped approval service reads openTurn (its audit pair must be turn-enclosed,
  // P43); the real loop runs its tool step inside the turn it opened, so a closed turn
  // cannot be arranged there. Without the shipped service the field has no effect.
  if (s.run?.kind === 'loop') {
    const agent = (s.agents ?? []).find((a) => a.id === s.run.agent)
    if (agent?.openTurn === false && s.approval?.service === 'shipped') {
      return '$.agents: the loop agent runs its tool step inside the turn the real loop opened; "openTurn": false with the shipped approval service cannot be expressed there'
    }
  }
  // What this version of the packages lacks (lib/compat.mjs): the agent loop, the timeout policy, Code Mode.
  return versionGaps(s)
}

/** The classes error tokens name: `HarnessError` (the package's). */
export function realm() {
  return { HarnessError }
}

/**
 * A pipeline for the scenario of `w` (before virtual time starts): a loaded deployment of
 * the plugins for its configuration. Returns the handle the other seams are handed.
 */
export async function open(w) {
  Object.assign(w, { host: null, probes: null, deferred: [] })
  const held = await deployments.acquire(w.scenario)
  if (held.deployment === null) throw new Error('the tool runtime did not start')
  return { ...held, fiber: null }
}

/**
 * Everything the scenario registers, under virtual time: its fork of the deployment, the
 * warning exporter, the scripted model of a loop run, the agents (w.addAgent), the declared
 * participants (w.registerDeclared, which calls `register`), presentation modes and
 * restrictions, and the probes.
 */
export async function prepare(w, pipeline) {
  const { deployment } = pipeline
  const run = w.scenario.run
  const loop = run.kind === 'loop'
  pipeline.fiber = deployment.enter(w)
  await pipeline.fiber
  if (w.host === null) throw new Error('the tool runtime did not start')
  w.host.logger.exporter({
    levels: { default: 2 },
    export: (message) => {
      if (message.type === 'warn') w.trace.warnings.push(message.args.map((a) => (typeof a === 'string' ? a : String(a))).join(' '))
    },
  })
  if (loop) w.host.llm.registerAdapter(['scripted'], scriptedModel(run.blocks ?? [], run.finish ?? 'tool-calls'))
  pipeline.loopAgent = makeAgents(w, deployment, w.scenario)
  // Every tool definition is built once up front, so that one the adapter cannot express
  // is a skip here and not a participant throw in the middle of a run.
  for (const t of w.scenario.tools ?? []) toolDefinition(w, t)
  // agent/pre-step listeners join at the tool step (loop.mjs): the first step's boundary
  // is the harness's, before the scenario's window (kit/scenario.py Listener).
  w.registerDeclared((ref, item) => {
    if (item.event !== 'agent/pre-step') return false
    if (loop) w.deferred.push(ref)
    return true
  })
  for (const a of w.scenario.agents ?? []) {
    if (a.mode === undefined || a.mode === null) continue
    try {
      w.agents.get(a.id).ctx.tools.presentAs(a.mode) // P28: the scope's own presentation
    } catch (e) {
      throw new Unsupported(`the package refuses the presentation mode of agent ${JSON.stringify(a.id)}: ${e?.message ?? e}`)
    }
  }
  for (const a of w.scenario.agents ?? []) {
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
}

/**
 * Register a declared participant (`kind` tool, listener or guard; `item` its scenario
 * declaration) in its scope, with the kit's scripted functions. Returns its disposer; the
 * package's throws propagate.
 */
export function register(w, kind, item) {
  const ctx = ctxFor(w, item.scope)
  if (kind === 'tool') return ctx.tools.register(toolDefinition(w, item))
  if (kind === 'guard') return ctx.tools.guard(guardFunction(w, item))
  let fn = listenerFunction(w, item)
  if (item.event === 'tools/execute') {
    const scripted = fn
    fn = (exec, next) => {
      noticeDeadline(w, exec)
      return scripted(exec, next)
    }
  }
  const dispose = ctx.on(item.event, fn, { prepend: Boolean(item.prepend), global: Boolean(item.global) })
  // The probes stay outermost: a prepended listener goes in front of every earlier one,
  // so the probe is moved in front of it again.
  if (item.prepend) w.probes?.reseat(item.event)
  return dispose
}

/** One direct call: `input` is {callId, name, arguments, signal, agent?, rootCallId?, parent?}; returns the final result. */
export function execute(w, pipeline, input) {
  return pipeline.deployment.ctx.tools.execute(input)
}

/** A loop run: the tool step (and a next turn) of the loop agent; records its session events and results. */
export async function runLoop(w, pipeline) {
  const run = w.scenario.run
  const agent = pipeline.loopAgent
  await runToolStep(w, agent, run)
  w.trace.events.push(...loopEvents(w, run.agent, agent.session.events))
  if (run.present) present(w, pipeline.deployment.ctx.tools, agent)
}

/** End the scenario (under virtual time): its fork goes, with every registration made through it. */
export function leave(w, pipeline) {
  return pipeline.deployment.leave(pipeline.fiber)
}

/** After the run: keep the deployment for the next scenario of its configuration when the run ended cleanly, else retire it. */
export function release(pipeline, clean) {
  deployments.release(pipeline, clean)
}

// ------------------------------------------------------------------------------- steps

/** A body's `dispatch` step: the filesystem intent waterfall on the plugin's own context; returns its decision (a promise). */
export function dispatchIntent(w, event, target, record) {
  return w.host.waterfall(event, target, record, () => undefined)
}

/** A body's `append` step: a tool-owned session event on the record's agent, as the todo tool appends it. */
export function appendEvent(w, record, type, data) {
  record.agent.session.append(type, data)
}

/** An `inject` or `steer` step (`how`): the message to the loop agent. */
export function agentMessage(w, how, message) {
  if (how === 'inject') w.loopAgent.inject(message)
  else w.loopAgent.steer(message)
}

/** A `cancel` step, or an abort of the step's signal: the loop agent's cancel(reason, {keepInbox}). */
export function cancelAgent(w, reason, options) {
  w.loopAgent.cancel(reason, options)
}

// ------------------------------------------------------------------------------- helpers

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
      entry = w.addAgent(id, agent, { ctx: agent.ctx, session: agent.session })
    } else {
      const key = { id }
      key.session = standInSession(w, id, spec.openTurn !== false)
      entry = w.addAgent(id, key, { ctx: createScope(w.host, key, parent === undefined ? undefined : { parent }).ctx, session: key.session })
    }
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

function ctxFor(w, scope) {
  if (scope === undefined || scope === null) return w.host
  const agent = w.agents.get(scope)
  if (agent === undefined) throw new Unsupported(`unknown agent ${JSON.stringify(scope)}`)
  return agent.ctx
}

/**
 * Name the shipped timeout policy's deadline signal as the oracle does
 * (`deadline:<call>:<virtual ms>`). The policy is the outermost tools/execute listener
 * after the probe and puts its deadline on the record before it calls next(); scenario
 * listeners can only put named signals there. So an unnamed signal a scenario wrapper
 * finds on the record, other than the one the record entered the waterfall with, is the
 * policy's deadline.
 */
function noticeDeadline(w, exec) {
  if (!w.scenario.timeoutPolicy) return
  const signal = exec.signal
  if (signal === null || typeof signal !== 'object' || signal === w.executeEntry.get(exec) || w.signalNames.has(signal)) return
  for (const controller of w.named.values()) if (controller.signal === signal) return
  w.signalNames.set(signal, `deadline:${w.callOf(exec)}:${w.clock.now}`)
}
