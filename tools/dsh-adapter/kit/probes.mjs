// The probes: what an observer installed outermost on each seam sees (kit.trace
// PROBE_POINTS). They record stage boundaries; they never decide anything. The binding
// registers them (binding.mjs `prepare`); the approval seam's probe is World.probeApproval.
//
// - `tools/pre-execute`, `tools/execute`, `tools/post-execute`: a global listener kept in
//   front of every other listener records `start` (post-execute: with the result it is
//   handed), calls `next()` exactly once, and records `end` with what the waterfall
//   returns, or `throw` with what it throws.
// - `tools/result`: the first observer records `start` with the final result, and keeps
//   that object for the identity check of P98.
// - `approval`: the approval service's `request` is wrapped (World.probeApproval).
//
// Why a probe does not change the behavior it observes:
// - Shared cursor (P6). A cordis waterfall is one list of listeners consumed by every
//   `next()`, whoever calls it. The probe sits at the head and calls `next()` exactly once,
//   so it consumes exactly its own position: the first scenario listener is reached through
//   the probe's `next()` instead of the waterfall's own first call, and every later `next()`
//   (an extra one by a retrying wrapper included) meets the same remaining listeners and
//   terminal as it would without the probe.
// - Values and throws. The probe returns the very value (the same promise object) that its
//   `next()` returned, and rethrows a synchronous throw unchanged; the waterfall's result,
//   its identity and its rejection reason are those of the scenario's listeners.
// - Timing. The probe never awaits: it attaches its recording reactions to the promise and
//   returns that promise itself, so the registry awaits the same promise it would await
//   without the probe, after the same number of microtask turns. The recording reactions
//   are attached first, so `end` is recorded before the registry goes on.
// - Selection. Probes are registered `global`, so they are selected for every agent scope,
//   and with `prepend`, so they run first; when a scenario registers a prepended listener
//   later, the probe is moved in front again (the DSH binding's `register`). A waterfall in progress
//   keeps the listener list it selected at its start, as it does without the probe.
// - The `tools/result` probe is synchronous, returns nothing and never throws, so it adds
//   no warning (P101); observers after it receive the same arguments.

const STAGE = {
  'tools/pre-execute': 'pre-execute',
  'tools/execute': 'execute',
  'tools/post-execute': 'post-execute',
}

/**
 * The probe of waterfall `event` (tools/pre-execute, tools/execute, tools/post-execute), with
 * the waterfall's signature: (record, [result,] next). Register it outermost.
 */
export function waterfallProbe(w, event) {
  const stage = STAGE[event]
  return (...args) => {
    const exec = args[0]
    const next = args[args.length - 1]
    const call = event === 'tools/pre-execute' ? w.adopt(exec) : w.callOf(exec)
    w.obs(call, stage, 'start', null, event === 'tools/post-execute' ? w.enc(args[1]) : null)
    if (event === 'tools/execute') w.executeEntry.set(exec, exec.signal)
    let returned
    try {
      returned = next()
    } catch (x) {
      w.obs(call, stage, 'throw', null, w.enc(x))
      throw x
    }
    if (returned !== null && typeof returned === 'object' && typeof returned.then === 'function') {
      returned.then(
        (value) => w.obs(call, stage, 'end', null, w.enc(value)),
        (x) => w.obs(call, stage, 'throw', null, w.enc(x)),
      )
    } else {
      w.obs(call, stage, 'end', null, w.enc(returned))
    }
    return returned
  }
}

/** The probe of `tools/result`, with the observers' signature (record, result). Register it as the first observer. */
export function resultProbe(w) {
  return (exec, result) => {
    const call = w.callOf(exec)
    w.observed.set(call, result)
    w.obs(call, 'result', 'start', null, w.enc(result))
  }
}
