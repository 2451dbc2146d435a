// The viewer of `run.present` (oracle/viewer.py): after the step, a client's view of the
// loop agent's log. Each tool/call is projected through presentCall(arguments) and each
// tool/result through presentResult(arguments, {content, isError, meta?}) of the definition
// the agent sees now (`tools.get(name, agent)`, the lookup presenters are meant for). A
// presenter's throw costs its view only; arguments that are not JSON get no view.

import { stepWindow } from '../kit/events.mjs'

export function present(w, tools, agent) {
  const calls = new Map() // call id -> { name, args }
  for (const e of stepWindow(agent.session.events)) {
    if (e.type === 'tool/call') {
      let args
      try {
        args = JSON.parse(e.data.arguments)
      } catch {
        continue
      }
      calls.set(e.data.callId, { name: e.data.name, args })
      project(w, e.data.callId, () => tools.get(e.data.name, agent)?.presentCall?.(args))
    } else if (e.type === 'tool/result') {
      const callId = e.data.message.source.callId
      const call = calls.get(callId)
      if (call === undefined) continue
      const [block] = e.data.message.content
      const result = { content: block.content, isError: block.isError === true, ...(e.data.meta === undefined ? {} : { meta: e.data.meta }) }
      project(w, callId, () => tools.get(call.name, agent)?.presentResult?.(call.args, result))
    }
  }
}

function project(w, callId, view) {
  try {
    w.within(callId, view)
  } catch {
    // a throwing presenter costs its view only
  }
}
