// Running one scenario through a binding (binding.mjs): the language check, the binding's own
// check, a World on a virtual clock, the binding's pipeline and registrations, then the
// direct calls (here: each with its own caller signal, timers and getters) or the binding's
// loop run. Returns the trace (kit/trace.py's language, portable part only).

import { Clock, settle } from './clock.mjs'
import { Unsupported } from './faults.mjs'
import { checkLanguage } from './language.mjs'
import { World } from './world.mjs'

/**
 * The trace of `scenario` on the implementation `binding` binds.
 * @throws {Unsupported} a feature the kit or the binding cannot express (answer `skipped`).
 * @throws {AdapterFault|Error} the run broke (answer `errored`).
 */
export async function runScenario(binding, scenario) {
  checkLanguage(scenario)
  const gap = binding.unsupported(scenario)
  if (gap !== null && gap !== undefined) throw new Unsupported(gap)
  const clock = new Clock()
  const w = new World(scenario, binding, clock)
  w.begin()
  try {
    await runOn(w, clock)
  } finally {
    w.end()
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

/** Open the binding's pipeline for `w`, drive it on `clock`, leave and release it. */
async function runOn(w, clock) {
  const binding = w.binding
  const pipeline = await binding.open(w)
  const restore = clock.install()
  let clean = false
  try {
    try {
      await settle(drive(w, pipeline), clock)
    } finally {
      await settle(Promise.resolve(binding.leave(w, pipeline)), clock)
    }
    clean = w.fatal === null
  } finally {
    restore()
    binding.release(pipeline, clean)
  }
}

async function drive(w, pipeline) {
  const run = w.scenario.run
  await w.binding.prepare(w, pipeline)
  if (run.kind === 'loop') {
    await w.binding.runLoop(w, pipeline)
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
    // The caller's own timer (call.abortAt), dropped once the call resolved.
    const timer = call.abortAt === undefined || call.abortAt === null ? null : setTimeout(() => controller.abort(), call.abortAt)
    const result = await w.within(call.callId, () => w.binding.execute(w, pipeline, input))
    if (timer !== null) clearTimeout(timer)
    w.recordResult(call.callId, result)
  }
}
