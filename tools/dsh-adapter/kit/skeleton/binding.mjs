// The binding of your implementation to the dsh-conformance JS kit: one function per seam.
// Written by `dsh-conformance kit js DIR` beside the kit (kit/) and its entry (adapter.mjs);
// fill in every function, then run `dsh-conformance run --impl "node DIR/adapter.mjs"`.
// The kit interprets the scenario: it decodes values, builds the scripted participants
// (kit/participants.mjs) and Code Mode programs (kit/program.mjs), keeps virtual time, records
// the observations and speaks the protocol. The binding only puts what the kit builds into
// your pipeline, in your pipeline's own shapes. kit/README.md describes the World `w` every
// seam is handed (kit/world.mjs) and what each seam of the real package's binding does
// (tools/dsh-adapter/binding.mjs in the dsh-conformance sources is this skeleton filled in for
// @deepseek-ai/dsh-tools).
//
// A seam left as it is throws NotImplemented: in the handshake the adapter cannot start
// (exit 3, the seam named); in a run the scenario is answered `errored`, naming the seam.
// Throw Unsupported(reason) wherever your pipeline cannot express something: the scenario is
// answered `skipped` with the reason, never approximated.

import { NotImplemented } from './kit/faults.mjs'
// import { Unsupported } from './kit/faults.mjs'
// import { guardFunction, listenerFunction, toolFunctions, approvalRequest } from './kit/participants.mjs'
// import { resultProbe, waterfallProbe } from './kit/probes.mjs'
// import { runProgram } from './kit/program.mjs'

// ------------------------------------------------------------------------------- handshake

/**
 * The handshake's `implementation`.
 * Handed: nothing. Returns: `{name, version, language}` and anything else that identifies
 * what runs (it is copied into every report), e.g. `{name: 'my-port', version: '1.2.0', language: 'typescript'}`.
 */
export function implementation() {
  throw new NotImplemented('implementation')
}

/**
 * The profiles your implementation supports.
 * Handed: nothing. Returns: a subset of `['core', 'reference', 'loop', 'code-mode']`.
 */
export function profiles() {
  throw new NotImplemented('profiles')
}

/**
 * The handshake's features (informative; the catalog's feature names).
 * Handed: nothing. Returns: an array of strings, e.g. `['direct', 'virtual-time']`.
 */
export function features() {
  throw new NotImplemented('features')
}

/**
 * Whether the implementation can be driven at all (its packages present, its API as expected).
 * Handed: nothing. Returns: null, or one line saying why not (the adapter prints it and exits 3).
 */
export function cannotDrive() {
  throw new NotImplemented('cannotDrive')
}

// ------------------------------------------------------------------------------- a run

/**
 * What your implementation cannot express of a scenario the kit's language check accepted.
 * Handed: the scenario (a plain JSON object, scenario.schema.json). Returns: null, or the
 * reason (the scenario is answered `skipped`; start it with the JSON path, e.g. '$.run.kind: ...').
 */
export function unsupported(scenario) {
  throw new NotImplemented('unsupported')
}

/**
 * The classes the value codec's tokens name beyond the built-in ones.
 * Handed: nothing. Returns: `{HarnessError}`: your pipeline's error class with a `code` (what
 * an error token with `"harness": true` decodes to and what encoding recognizes), or
 * `{HarnessError: undefined}` when it has none.
 */
export function realm() {
  throw new NotImplemented('realm')
}

/**
 * A pipeline for the scenario of `w`, before virtual time starts (load plugins, build a
 * registry, configured by the scenario's `mode`, `approval`, `timeoutPolicy`, ...).
 * Handed: the World `w` (`w.scenario` the scenario). Returns (or resolves to): a handle of
 * your own, handed to the seams below as `pipeline`. You may keep state of your own on `w`.
 */
export async function open(w) {
  throw new NotImplemented('open')
}

/**
 * Everything the scenario registers, under virtual time (timers set now run on the kit's clock).
 * Handed: `w` and your `pipeline`. Must: record the scenario's agents with
 * `w.addAgent(id, key, extra)` (the key is what a call's input names as `agent`); register
 * the declared participants by calling `w.registerDeclared()` (it calls `register` below for
 * each); install the probes (kit/probes.mjs: `waterfallProbe(w, event)` outermost on
 * tools/pre-execute, tools/execute and tools/post-execute, `resultProbe(w)` as the first
 * tools/result observer) and wrap your approval service's request with `w.probeApproval`.
 * Returns: nothing (or a promise).
 */
export async function prepare(w, pipeline) {
  throw new NotImplemented('prepare')
}

/**
 * Register one declared participant.
 * Handed: `w`, `kind` ('tool' | 'listener' | 'guard') and `item`, its declaration in the
 * scenario (`item.scope` names the agent whose scope it is registered in, or none). Build its
 * functions with the kit: a tool's with `toolFunctions(w, item)` ({execute(args, record),
 * render(args, value), and when scripted presentationMeta, finalizeContent(record, result),
 * isConcurrencySafe(args), presentCall(args), presentResult(args, result)}), a listener's
 * with `listenerFunction(w, item)` (the signature of `item.event`), a guard's with
 * `guardFunction(w, item)` (record) => string | undefined.
 * Returns: a function that unregisters it (the `unregister` step calls it). Let your
 * pipeline's own throws propagate (a refused registration is a skip).
 */
export function register(w, kind, item) {
  throw new NotImplemented('register')
}

/**
 * One direct call through the pipeline (`run.kind: "direct"`).
 * Handed: `w`, `pipeline` and the caller's `input`: `{callId, name, arguments, signal,
 * agent?, rootCallId?, parent?}` (arguments decoded, the signal the caller's own). Returns
 * (or resolves to): the call's final result object, the very object the `tools/result`
 * observers received.
 */
export function execute(w, pipeline, input) {
  throw new NotImplemented('execute')
}

/**
 * A loop run (`run.kind: "loop"`, profile `loop`): the agent's tool step with the scenario's
 * tool-call blocks as the model's answer. Handed: `w` and `pipeline`. Must set `w.loopAgent`
 * while the run lasts, push each call's final result with `w.recordResult(callId, result)`
 * and the step's session events onto `w.trace.events`. Returns: a promise, resolved when the
 * agent is idle. A binding without the loop profile throws Unsupported here.
 */
export async function runLoop(w, pipeline) {
  throw new NotImplemented('runLoop')
}

/**
 * The end of the scenario, under virtual time: undo its registrations.
 * Handed: `w` and `pipeline`. Returns: nothing (or a promise).
 */
export async function leave(w, pipeline) {
  throw new NotImplemented('leave')
}

/**
 * After the run, outside virtual time: keep `pipeline` for a later scenario or drop it.
 * Handed: `pipeline` and `clean` (false after a fault, a skip or a run that never settled:
 * drop it then). Returns: nothing.
 */
export function release(pipeline, clean) {
  throw new NotImplemented('release')
}

// ------------------------------------------------------------------------------- steps

/**
 * A body's `dispatch` step (P71): a filesystem intent waterfall.
 * Handed: `w`, `event` ('fs/write-intent' | 'fs/edit-intent'), the decoded `target` and the
 * body's execution `record`. Returns: a promise of the waterfall's decision (its listeners
 * are the scenario's, registered by `register`; the default is undefined).
 */
export function dispatchIntent(w, event, target, record) {
  throw new NotImplemented('dispatchIntent')
}

/**
 * A body's `append` step: a tool-owned session event on the record's agent's session.
 * Handed: `w`, the `record` (which has an agent), the event `type` and its decoded `data`.
 * Returns: nothing; throws what your session throws for data it refuses.
 */
export function appendEvent(w, record, type, data) {
  throw new NotImplemented('appendEvent')
}

/**
 * An `inject` or `steer` step (loop runs): a message to `w.loopAgent`.
 * Handed: `w`, `how` ('inject' | 'steer') and the decoded message. Returns: nothing.
 */
export function agentMessage(w, how, message) {
  throw new NotImplemented('agentMessage')
}

/**
 * A `cancel` step, or an abort of the signal named "step" (loop runs): the agent's cancel.
 * Handed: `w`, the decoded `reason` (or undefined) and `{keepInbox}`. Returns: nothing.
 */
export function cancelAgent(w, reason, options) {
  throw new NotImplemented('cancelAgent')
}
