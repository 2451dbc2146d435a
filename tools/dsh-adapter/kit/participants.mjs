// The scripted participants: for each participant a scenario declares, the function the
// implementation calls, whose behavior is the participant's script (script.mjs). The binding
// registers these functions in the implementation's own shapes (binding.mjs `register`); it
// never interprets a script itself.
//
// Participant ids and stages follow the oracle: a tool's body is `<id>` (stage body), its
// projections `<id>.render`, `<id>.presentationMeta`, `<id>.finalizeContent` and
// `<id>.isConcurrencySafe`; the custom approval service is `approval`. What each
// invocation is handed (record, result, args, request) is what the oracle's Invocation
// carries for that kind of participant, so `observe` and `mutate` steps mean the same.
// Every function has the signature the spec gives its seam (the shapes of
// @deepseek-ai/dsh-tools, which the spec describes).

import { Unsupported } from './faults.mjs'
import { Invocation, delegateBehavior, perform, performSync } from './script.mjs'

const RETURN_UNDEFINED = [{ do: 'return', value: { $js: 'undefined' } }]

/**
 * The scripted functions of a declared tool `t`:
 * - `execute(args, record)`: the body (async; opens the call's loop gate when it ends);
 * - `render(args, value)`: the output's render (the default one, JSON text, when `t` has none);
 * - `presentationMeta(args, value)`, `finalizeContent(record, result)`, `isConcurrencySafe(args)`,
 *   `presentCall(args)`, `presentResult(args, result)`: present only when `t` scripts them.
 * Synchronous projections find their call through the world's current call (World.within).
 */
export function toolFunctions(w, t) {
  const ref = t.id ?? t.name
  const output = t.output ?? {}
  const fns = {}
  fns.execute = async (args, exec) => {
    try {
      return await perform(w, new Invocation({ who: ref, stage: 'body', call: w.callOf(exec), record: exec, args }), t.body ?? RETURN_UNDEFINED)
    } finally {
      w.openGate(w.callOf(exec))
    }
  }
  const projection = (which) => (_args, _value) => {
    const exec = w.currentExec()
    return performSync(w, new Invocation({ who: `${ref}.${which}`, stage: which, call: w.callOf(exec), record: exec }), output[which])
  }
  fns.render = output.render ? projection('render') : (_args, value) => [{ type: 'text', text: JSON.stringify(value) }]
  if (output.presentationMeta) fns.presentationMeta = projection('presentationMeta')
  if (t.finalizeContent) {
    fns.finalizeContent = (exec, result) =>
      performSync(w, new Invocation({ who: `${ref}.finalizeContent`, stage: 'finalize', call: w.callOf(exec), record: exec, result }), t.finalizeContent)
  }
  if (t.concurrencySafe) {
    fns.isConcurrencySafe = (args) =>
      performSync(w, new Invocation({ who: `${ref}.isConcurrencySafe`, stage: 'classify', call: w.classifying, record: null, args }), t.concurrencySafe)
  }
  // UI projections: the pipeline never calls them (P14; if it did, the trace shows it in
  // the middle of the call); a viewer calls them after the step, with the call it
  // projects as the current call.
  for (const which of ['presentCall', 'presentResult']) {
    if (t[which]) {
      fns[which] = (args, result) => performSync(w, new Invocation({
        who: `${ref}.${which}`, stage: which, call: w.currentCall(), record: null, args, result,
      }), t[which])
    }
  }
  return fns
}

/** The scripted function of a declared listener, with the signature of its event. */
export function listenerFunction(w, l) {
  const script = l.script ?? (l.event === 'tools/result' ? [] : delegateBehavior())
  switch (l.event) {
    case 'tools/pre-execute':
      return (exec, next) => perform(w, new Invocation({ who: l.id, stage: 'pre-execute', call: w.callOf(exec), record: exec, next }), script)
    case 'tools/execute':
      return (exec, next) => perform(w, new Invocation({ who: l.id, stage: 'execute', call: w.callOf(exec), record: exec, next }), script)
    case 'tools/post-execute':
      return (exec, result, next) => perform(w, new Invocation({ who: l.id, stage: 'post-execute', call: w.callOf(exec), record: exec, next, result }), script)
    case 'approval/request':
      return (req, next) => {
        const call = w.requestCall(req)
        return perform(w, new Invocation({
          who: l.id, stage: 'approval', call, record: w.execs.get(call) ?? null, next, request: req, requestSignal: req.signal ?? null,
        }), script)
      }
    case 'tools/result':
      return (exec, result) => performSync(w, new Invocation({ who: l.id, stage: 'result', call: w.callOf(exec), record: exec, result }), script)
    case 'agent/pre-step':
      // A step boundary (P110): the payload {messages, turn, step, signal, agent} is the
      // listener's `request`; it decides enter (with messages) or reject.
      return (payload, next) => perform(w, new Invocation({
        who: l.id, stage: 'pre-step', call: null, record: null, next, request: payload, requestSignal: payload?.signal ?? null,
      }), script)
    case 'fs/write-intent':
    case 'fs/edit-intent':
      // A filesystem intent, dispatched by a body (binding `dispatchIntent`) as (target, record, next).
      return (target, exec, next) => perform(w, new Invocation({ who: l.id, stage: 'fs-intent', call: w.callOf(exec), record: exec, next, args: target }), script)
    case 'tools/code-dispatch-log':
      // P122: handed the settled sub-call and run_code's record; it runs for the sub-call.
      return (dispatch, next) => perform(w, new Invocation({
        who: l.id,
        stage: 'code-dispatch-log',
        call: String(dispatch?.subCallId),
        record: dispatch?.exec ?? null,
        next,
        result: { subCallId: dispatch?.subCallId, name: dispatch?.name, isError: dispatch?.isError, content: dispatch?.content },
      }), script)
  }
  throw new Unsupported(`listener ${l.id}: unknown event ${JSON.stringify(l.event)}`)
}

/** The scripted function of a declared guard (synchronous; undefined abstains). */
export function guardFunction(w, g) {
  return (exec) => performSync(w, new Invocation({ who: g.id, stage: 'guards', call: w.callOf(exec), record: exec }), g.script ?? RETURN_UNDEFINED)
}

/**
 * The scenario's custom approval service (`approval.service: "custom"`): `request(req)`
 * runs its script and is recorded by the approval probe (World.probeApproval). `current()`
 * is the World of the scenario running now (a service may outlive one scenario).
 */
export function approvalRequest(current) {
  return (req) => {
    const w = current()
    const call = w.requestCall(req)
    return w.probeApproval(req, () => perform(w, new Invocation({
      who: 'approval', stage: 'approval', call, record: w.execs.get(call) ?? null, request: req, requestSignal: req.signal ?? null,
    }), w.scenario.approval.script))
  }
}
