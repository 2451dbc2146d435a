// A toy binding of the JS kit (tests/test_kit_js.py): a pipeline of a few dozen lines, with
// no framework and no DSH package, for the direct calls of the `core` profile's simplest
// cases (pre-execute, guards, the execute waterfall around the body, post-execute, frozen
// results, tools/result observers). It shows that the kit's generic half runs on a binding
// that is not DSH's; it is not an implementation of the spec (anything beyond these
// seams is Unsupported).

import { Unsupported } from './kit/faults.mjs'
import { guardFunction, listenerFunction, toolFunctions } from './kit/participants.mjs'
import { resultProbe, waterfallProbe } from './kit/probes.mjs'

export const implementation = () => ({ name: 'toy-pipeline', version: '0.0.1', language: 'javascript' })
export const profiles = () => ['core', 'reference']
export const features = () => ['direct', 'virtual-time']
export const cannotDrive = () => null
export const realm = () => ({ HarnessError: undefined })

export function unsupported(s) {
  if (s.run.kind !== 'direct') return '$.run.kind: the toy runs direct calls only'
  for (const key of ['approval', 'agents', 'programs', 'getters', 'timeoutPolicy']) {
    if (s[key]) return `$.${key}: not in the toy`
  }
  if ((s.mode ?? 'native') !== 'native') return '$.mode: not in the toy'
  return null
}

export async function open(w) {
  return { tools: new Map(), guards: [], on: { 'tools/pre-execute': [], 'tools/execute': [], 'tools/post-execute': [], 'tools/result': [] } }
}

export async function prepare(w, pipeline) {
  w.toy = pipeline
  w.registerDeclared()
  for (const event of ['tools/pre-execute', 'tools/execute', 'tools/post-execute']) pipeline.on[event].unshift(waterfallProbe(w, event))
  pipeline.on['tools/result'].unshift(resultProbe(w))
}

function added(list, item) {
  list.push(item)
  return () => { const i = list.indexOf(item); if (i >= 0) list.splice(i, 1) }
}

export function register(w, kind, item) {
  const p = w.toy
  if (item.scope || item.prepend || item.global) throw new Unsupported('scopes and prepends are not in the toy')
  if (kind === 'tool') {
    p.tools.set(item.name, toolFunctions(w, item))
    return () => p.tools.delete(item.name)
  }
  if (kind === 'guard') return added(p.guards, guardFunction(w, item))
  if (!(item.event in p.on)) throw new Unsupported(`${item.event} is not in the toy`)
  return added(p.on[item.event], listenerFunction(w, item))
}

// A waterfall: one cursor shared by every next() (P6), `last` the terminal.
function waterfall(listeners, args, last) {
  let i = 0
  const next = () => (i < listeners.length ? listeners[i++](...args, next) : last())
  return next()
}

function failure(message) {
  return { isError: true, error: { message }, content: [{ type: 'text', text: `Error: ${String(message)}` }] }
}

function deepFreeze(v) {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v)
    for (const k of Object.keys(v)) deepFreeze(v[k])
  }
  return v
}

export async function execute(w, pipeline, input) {
  const tool = pipeline.tools.get(input.name)
  const record = { callId: input.callId, rootCallId: input.callId, name: input.name, arguments: deepFreeze(structuredClone(input.arguments)), signal: input.signal }
  const decision = await waterfall(pipeline.on['tools/pre-execute'], [record], async () => ({ kind: 'allow' }))
  let result
  if (tool === undefined) result = failure(`Unknown tool: ${input.name}`)
  else if (decision?.kind === 'deny') result = failure(decision.reason)
  else {
    let denied
    for (const guard of pipeline.guards) {
      const said = guard(record)
      if (said !== undefined) { denied = said; break }
    }
    if (denied !== undefined) result = failure(denied)
    else {
      try {
        result = await waterfall(pipeline.on['tools/execute'], [record], async () => {
          const value = await tool.execute(record.arguments, record)
          return { isError: false, value, content: tool.render(record.arguments, value) }
        })
      } catch (e) {
        result = failure(e?.message ?? String(e))
      }
    }
  }
  const post = await waterfall(pipeline.on['tools/post-execute'], [record, result], async () => ({ kind: 'accept' }))
  if (post?.kind === 'block') result = failure(post.feedback)
  deepFreeze(result)
  Object.freeze(record)
  for (const observer of pipeline.on['tools/result']) {
    try { observer(record, result) } catch { /* observers' throws are contained */ }
  }
  return result
}

export async function runLoop() {
  throw new Unsupported('the toy has no agent loop')
}

export async function leave() {}
export function release() {}
export function dispatchIntent() { throw new Unsupported('no filesystem intents in the toy') }
export function appendEvent() { throw new Unsupported('no sessions in the toy') }
export function agentMessage() { throw new Unsupported('no agent loop in the toy') }
export function cancelAgent() { throw new Unsupported('no agent loop in the toy') }
