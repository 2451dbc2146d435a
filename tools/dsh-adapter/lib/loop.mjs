// The agent-loop driver: one tool step of the real @deepseek-ai/dsh-agent-loop, with a
// scripted model in place of an LLM.
//
// The scripted adapter answers the first request with the scenario's tool-call blocks
// (finish "tool-calls" or "max-tokens") and every later request with one text block
// ("done", finish "stop"). The trace reports the session events of the tool step, cut and
// normalized by the kit (kit/events.mjs).

import { LlmAdapter, SCHEDULER, createUserMessage } from './compat.mjs'

/**
 * The scripted model: answers the first request with the scenario's tool-call blocks, every
 * later one with "done". The class is made on use, not at import: a package set without
 * dsh-llm's LlmAdapter must still load this module to say why it cannot be driven.
 */
export function scriptedModel(blocks, finish) {
  return new (class ScriptedModel extends LlmAdapter {
    constructor(blocks, finish) {
      super()
      this.requests = 0
      this.blocks = blocks
      this.finish = finish
    }

    async * stream(_options) {
      this.requests += 1
      if (this.requests === 1) {
        let index = 0
        for (const b of this.blocks) {
          yield { type: 'block-start', index, blockType: 'tool-call' }
          yield { type: 'tool-call-delta', index, id: b.id, name: b.name, argumentsDelta: b.arguments ?? '' }
          yield { type: 'block-end', index, block: { type: 'tool-call', id: b.id, name: b.name, arguments: b.arguments ?? '' } }
          index += 1
        }
        yield { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } }
        yield { type: 'finish', reason: { kind: this.finish === 'max-tokens' ? 'max-tokens' : 'tool-calls' } }
        return
      }
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'text-delta', index: 0, text: 'done' }
      yield { type: 'block-end', index: 0, block: { type: 'text', text: 'done' } }
      yield { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } }
      yield { type: 'finish', reason: { kind: 'stop' } }
    }
  })(blocks, finish)
}

/**
 * Instrument the registry's staged scheduler, through which the loop runs every call:
 * - `prepare` keeps the caller's input (for `input` mutations and the `caller` signal
 *   name) and opens the call's loop gate when it will never dispatch;
 * - `dispatch` opens the gate when the dispatch settles;
 * - `finalize`/`finish` record the final result the loop commits.
 * Each wrapper returns exactly what the scheduler returns (the same promise), and runs the
 * stage inside the call's async context so that synchronous projections know their call.
 * Installed once per deployment: `current()` is the World of the scenario running now, and
 * a stage's reactions keep the World it started in.
 */
export function instrumentScheduler(current, tools) {
  const scheduler = tools[SCHEDULER]
  const { prepare, dispatch, finalize, finish } = scheduler
  const settled = (promise, onValue, onError = onValue) => {
    promise.then(onValue, onError)
    return promise
  }
  // A run_code sub-call's classifier runs for that sub-call (oracle/classify.py).
  const executionMode = tools.executionMode
  tools.executionMode = function (input) {
    if (input?.parent === undefined) return executionMode.call(this, input)
    const w = current()
    const saved = w.classifying
    w.classifying = String(input.callId)
    try {
      return executionMode.call(this, input)
    } finally {
      w.classifying = saved
    }
  }
  scheduler.prepare = (input) => {
    const w = current()
    w.inputs.set(input.callId, input)
    return settled(w.within(input.callId, () => prepare(input)), (prepared) => {
      if (prepared?.kind !== 'dispatch') w.openGate(input.callId)
    }, () => w.openGate(input.callId))
  }
  scheduler.dispatch = (exec) => {
    const w = current()
    const call = w.callOf(exec)
    return settled(w.within(call, () => dispatch(exec)), () => w.openGate(call))
  }
  scheduler.finalize = (exec, result) => {
    const w = current()
    const call = w.callOf(exec)
    return settled(w.within(call, () => finalize(exec, result)), (out) => w.recordResult(call, out), () => {})
  }
  scheduler.finish = (exec, result) => {
    const w = current()
    const call = w.callOf(exec)
    const out = w.within(call, () => finish(exec, result))
    w.recordResult(call, out)
    return out
  }
}

/**
 * Run the loop scenario's tool step on `agent` and return when the agent is idle; with
 * `run.nextTurn`, then send that message with followup() and wait again (P112).
 */
export async function runLoop(w, agent, run) {
  w.loopAgent = agent
  // When the tool step's assistant message is recorded: the deferred agent/pre-step
  // listeners join, and an already aborted step is aborted (oracle: st.signal.abort after
  // assistant/message), before the batch starts.
  // The caller's cancel() at a chosen virtual time (run.cancelAt), dropped when the tool
  // step ends (oracle/loop.py: no later turn of the run is the caller's to cancel).
  const at = run.cancelAt
  const timer = at === undefined || at === null ? null : setTimeout(() => {
    agent.cancel(at.reason === undefined || at.reason === null ? undefined : w.dec(at.reason), { keepInbox: at.keepInbox !== false })
  }, at.ms)
  const session = agent.session
  const append = session.append
  let started = false
  session.append = function (type, data, ...rest) {
    const seen = w.trace.observations.length // where the event falls among the observations (the trace's `at`)
    const event = append.call(this, type, data, ...rest)
    if (event !== null && typeof event === 'object') w.eventAt.set(event.seq, seen)
    if (!started && type === 'assistant/message') {
      started = true
      for (const ref of w.deferred) w.register(ref)
      if (run.aborted) agent.cancel(undefined, { keepInbox: true })
    }
    if (type === 'step/end' && data?.turn === 1 && data?.step === 1 && timer !== null) clearTimeout(timer)
    return event
  }
  agent.followup(createUserMessage({ content: [{ type: 'text', text: 'go' }], source: { kind: 'user' } }))
  await agent.whenIdle()
  if (timer !== null) clearTimeout(timer)
  if (run.nextTurn === undefined || run.nextTurn === null) return
  // A steer after the abort woke the agent into the next turn already (P112): that turn is
  // the one the trace shows, and the caller sends nothing (oracle/turns.py next_turn).
  if (session.events.some((e) => e.type === 'turn/start' && e.data?.turn > 1)) return
  try {
    agent.followup(w.dec(run.nextTurn))
  } catch {
    return // an id already queued: followup() throws and no turn starts (oracle/turns.py)
  }
  await agent.whenIdle()
}
