// Session events in the trace: the window of a loop run's session log the trace reports,
// and each event's data in the oracle's shapes (oracle/loop.py). The events are those the
// spec names, with the data DSH's session writes (a binding whose log differs maps it to
// these shapes first).
//
// The window runs from the tool step's assistant/message up to (not including) the next
// step's assistant/message or the turn's end (turn/end; or turn/start, since rc.8 writes no
// turn/end for an aborted turn); with a next turn, to that turn's first assistant/message.
// It is restricted to the event types of the trace language and normalized:
// - assistant/message data is {turn, step, content};
// - the tool-result message of tool/result loses its random id;
// - approval request ids are renumbered approval-1, approval-2, ... in order;
// - events are renumbered from 1 and sourceEventSeqs follow the renumbering.
// Streaming chunks and request bookkeeping (assistant/chunk, request/header,
// request/context) are the model transport's, not the pipeline's, and are not reported.
// `w.eventAt` (session seq -> observations recorded before it was appended) is the binding's
// to fill as the session appends.

export const REPORTED_EVENTS = new Set([
  'assistant/message', 'tool/call', 'tool/result', 'agent/inbox/spliced', 'step/start', 'step/end',
  'user/message', 'approval/asked', 'approval/decided', 'todo/write', 'tool/code-dispatch-start', 'tool/code-dispatch',
])

/** The reported session events of the tool step, normalized (see the module comment). */
export function loopEvents(w, agentId, sessionEvents) {
  // A next turn (run.nextTurn, or a steer after the abort that woke the agent) extends the
  // window to that turn's first model request (oracle/turns.py).
  const later = sessionEvents.some((e) => e.type === 'turn/start' && e.data?.turn > 1)
  const window = later ? turnsWindow(sessionEvents) : stepWindow(sessionEvents)
  // What the agent goes on to do after the window (a later turn's agent/pre-step, for one)
  // is not the scenario's: its observations go with the events that were cut.
  const next = window.length > 0 ? sessionEvents[sessionEvents.indexOf(window[window.length - 1]) + 1] : undefined
  if (next !== undefined && w.eventAt.has(next.seq)) w.trace.observations.length = Math.min(w.trace.observations.length, w.eventAt.get(next.seq))
  const renumbered = new Map()
  const out = []
  for (const e of window) {
    if (!REPORTED_EVENTS.has(e.type)) continue
    const seq = out.length + 1
    renumbered.set(e.seq, seq)
    const sources = e.sourceEventSeqs
    out.push({
      agent: agentId,
      seq,
      type: e.type,
      data: eventData(w, e.type, e.data),
      sourceEventSeqs: Array.isArray(sources) && e.type !== 'assistant/message' ? sources.map((s) => renumbered.get(s) ?? s) : null,
      ...(w.eventAt.has(e.seq) ? { at: w.eventAt.get(e.seq) } : {}),
    })
  }
  return out
}

/** The session events of the tool step: from its assistant/message to the next step's model call. */
export function stepWindow(sessionEvents) {
  const first = sessionEvents.findIndex((e) => e.type === 'assistant/message')
  if (first < 0) return []
  const window = []
  for (let i = first; i < sessionEvents.length; i++) {
    const e = sessionEvents[i]
    if (i > first && (e.type === 'assistant/message' || e.type === 'turn/end' || e.type === 'turn/start')) break
    window.push(e)
  }
  return window
}

/**
 * With a next turn: from the tool step's assistant/message to the model call of the next
 * turn's first step (its assistant/message, exclusive), through the rest of the tool
 * step's turn.
 */
export function turnsWindow(sessionEvents) {
  const first = sessionEvents.findIndex((e) => e.type === 'assistant/message')
  if (first < 0) return []
  const turn = sessionEvents[first].data?.turn
  const window = []
  for (let i = first; i < sessionEvents.length; i++) {
    const e = sessionEvents[i]
    if (i > first && e.type === 'assistant/message' && e.data?.turn !== turn) break
    window.push(e)
  }
  return window
}

/** Event data in the oracle's shapes. */
export function eventData(w, type, data) {
  switch (type) {
    case 'assistant/message':
      return { turn: data.turn, step: data.step, content: w.enc(data.message?.content) }
    case 'tool/result': {
      const out = {}
      for (const key of Object.keys(data)) {
        if (key !== 'message') { out[key] = data[key]; continue }
        const { id: _id, ...message } = data.message
        out.message = message
      }
      return w.enc(out)
    }
    case 'approval/asked':
    case 'approval/decided':
      return w.enc({ ...data, id: w.approvalId(data.id) })
  }
  return w.enc(data)
}
