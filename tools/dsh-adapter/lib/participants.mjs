// Scenario translation: each declared participant becomes the real registration the
// package expects (a raw ToolDefinition or a defineTool tool, a waterfall listener, a
// monotonic guard, an approval service), whose behavior is the participant's script.
//
// Participant ids and stages follow the oracle: a tool's body is `<id>` (stage body), its
// projections `<id>.render`, `<id>.presentationMeta`, `<id>.finalizeContent` and
// `<id>.isConcurrencySafe`; the custom approval service is `approval`. What each
// invocation is handed (record, result, args, request) is what the oracle's Invocation
// carries for that kind of participant, so `observe` and `mutate` steps mean the same.

import { ApprovalService, Service, defineTool } from './compat.mjs'
import { Unsupported } from './faults.mjs'
import { Invocation, delegateBehavior, perform, performSync } from './script.mjs'

const RETURN_UNDEFINED = [{ do: 'return', value: { $js: 'undefined' } }]

// ------------------------------------------------------------------------------- tools

/** The real tool definition for a declared tool (raw, or through defineTool). */
export function toolDefinition(w, t) {
  const ref = t.id ?? t.name
  const output = t.output ?? {}
  const body = async (args, exec) => {
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
  const render = output.render ? projection('render') : (_args, value) => [{ type: 'text', text: JSON.stringify(value) }]
  const extra = {}
  if (t.finalizeContent) {
    extra.finalizeContent = (exec, result) =>
      performSync(w, new Invocation({ who: `${ref}.finalizeContent`, stage: 'finalize', call: w.callOf(exec), record: exec, result }), t.finalizeContent)
  }
  if (t.concurrencySafe) {
    extra.isConcurrencySafe = (args) =>
      performSync(w, new Invocation({ who: `${ref}.isConcurrencySafe`, stage: 'classify', call: w.classifying, record: null, args }), t.concurrencySafe)
  }
  if (t.timeoutMs !== undefined && t.timeoutMs !== null) extra.timeoutMs = t.timeoutMs
  // UI projections: the pipeline never calls them (P14; if it did, the trace shows it in
  // the middle of the call); the viewer (run.present, see viewer.mjs) calls them after the
  // step, with the call it projects as the current call.
  for (const which of ['presentCall', 'presentResult']) {
    if (t[which]) {
      extra[which] = (args, result) => performSync(w, new Invocation({
        who: `${ref}.${which}`, stage: which, call: w.currentCall(), record: null, args, result,
      }), t[which])
    }
  }
  const description = t.description ?? 'a scripted tool'
  const parameters = t.parameters ?? { type: 'object' }
  if (t.define) {
    return defineTool({
      name: t.name,
      description,
      parameters: parameterDsl(parameters, `tool ${ref}: parameters`),
      output: {
        schema: valueDsl(output.schema ?? {}, `tool ${ref}: output.schema`),
        render,
        ...(output.presentationMeta ? { presentationMeta: projection('presentationMeta') } : {}),
      },
      execute: body,
      ...extra,
    })
  }
  return {
    name: t.name,
    description,
    parameters,
    output: {
      schema: output.schema ?? {},
      render,
      ...(output.presentationMeta ? { presentationMeta: projection('presentationMeta') } : {}),
    },
    execute: body,
    ...extra,
  }
}

// A defineTool tool declares its parameters and output in the tools DSL; a scenario gives
// JSON Schema. The translation covers the DSL's whole vocabulary; a schema the DSL cannot
// say is not approximated: the scenario is skipped.

const ANNOTATIONS = ['description', 'title', 'default', 'examples']
const CONSTRAINTS = ['type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'oneOf']

function parameterDsl(schema, where) {
  if (!isRecord(schema) || schema.type !== 'object') throw new Unsupported(`${where}: defineTool parameters must be an object schema`)
  for (const key of Object.keys(schema)) {
    if (!['type', 'properties', 'required'].includes(key)) {
      throw new Unsupported(`${where}: the defineTool parameter DSL cannot say the root keyword ${JSON.stringify(key)}`)
    }
  }
  return propertyMap(schema, where)
}

function propertyMap(schema, where) {
  const properties = schema.properties ?? {}
  const required = schema.required ?? []
  if (!isRecord(properties) || !Array.isArray(required)) throw new Unsupported(`${where}: malformed properties/required`)
  for (const name of required) {
    if (!Object.hasOwn(properties, name)) throw new Unsupported(`${where}: the DSL cannot require the undeclared property ${JSON.stringify(name)}`)
  }
  const out = {}
  for (const [name, sub] of Object.entries(properties)) {
    const node = valueDsl(sub, `${where}.${name}`)
    if (required.includes(name)) node.required = true
    Object.defineProperty(out, name, { value: node, enumerable: true, writable: true, configurable: true })
  }
  return out
}

function valueDsl(schema, where) {
  if (!isRecord(schema)) throw new Unsupported(`${where}: a boolean or non-object schema has no DSL form`)
  const node = {}
  for (const key of Object.keys(schema)) {
    if (ANNOTATIONS.includes(key)) node[key] = schema[key]
    else if (!CONSTRAINTS.includes(key)) throw new Unsupported(`${where}: the DSL has no keyword ${JSON.stringify(key)}`)
  }
  if (Object.hasOwn(schema, 'oneOf')) {
    if (Object.keys(schema).some((k) => CONSTRAINTS.includes(k) && k !== 'oneOf')) throw new Unsupported(`${where}: oneOf beside other constraints has no DSL form`)
    node.oneOf = schema.oneOf.map((branch, i) => valueDsl(branch, `${where}.oneOf[${i}]`))
    return node
  }
  if (!Object.hasOwn(schema, 'type')) {
    if (Object.keys(schema).some((k) => CONSTRAINTS.includes(k))) throw new Unsupported(`${where}: constraints without a type have no DSL form`)
    node.type = 'json'
    return node
  }
  const allowed = {
    object: ['type', 'properties', 'required', 'additionalProperties'],
    array: ['type', 'items'],
    string: ['type', 'enum', 'const'],
    number: ['type', 'enum', 'const'],
    integer: ['type', 'enum', 'const'],
    boolean: ['type', 'enum', 'const'],
    null: ['type', 'enum', 'const'],
  }[schema.type]
  if (allowed === undefined) throw new Unsupported(`${where}: type ${JSON.stringify(schema.type)} has no DSL form`)
  for (const key of Object.keys(schema)) {
    if (CONSTRAINTS.includes(key) && !allowed.includes(key)) throw new Unsupported(`${where}: ${key} on a ${schema.type} schema has no DSL form`)
  }
  node.type = schema.type
  switch (schema.type) {
    case 'object':
      node.additionalProperties = schema.additionalProperties ?? true
      if (typeof node.additionalProperties !== 'boolean') throw new Unsupported(`${where}: a schema-valued additionalProperties has no DSL form`)
      if (Object.hasOwn(schema, 'properties') || Object.hasOwn(schema, 'required')) node.properties = propertyMap(schema, where)
      break
    case 'array':
      if (Object.hasOwn(schema, 'items')) node.items = valueDsl(schema.items, `${where}.items`)
      break
    default:
      if (Object.hasOwn(schema, 'enum')) node.enum = schema.enum
      if (Object.hasOwn(schema, 'const')) node.const = schema.const
  }
  return node
}

function isRecord(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

// ------------------------------------------------------------------------------- listeners

/** The real listener function for a declared listener. */
export function listenerFunction(w, l) {
  const script = l.script ?? (l.event === 'tools/result' ? [] : delegateBehavior())
  switch (l.event) {
    case 'tools/pre-execute':
      return (exec, next) => perform(w, new Invocation({ who: l.id, stage: 'pre-execute', call: w.callOf(exec), record: exec, next }), script)
    case 'tools/execute':
      return (exec, next) => {
        w.noticeDeadline(exec)
        return perform(w, new Invocation({ who: l.id, stage: 'execute', call: w.callOf(exec), record: exec, next }), script)
      }
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
      // A filesystem intent, dispatched by a body as ctx.waterfall(event, target, exec, next).
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

/** The real guard function for a declared guard (synchronous; undefined abstains). */
export function guardFunction(w, g) {
  return (exec) => performSync(w, new Invocation({ who: g.id, stage: 'guards', call: w.callOf(exec), record: exec }), g.script ?? RETURN_UNDEFINED)
}

// ------------------------------------------------------------------------------- approval

/**
 * The approval plugin for the scenario's approval service: the shipped ApprovalService
 * (answered by `approval/request` listeners), or a scripted service. Either one is wrapped
 * by the approval probe: the request the registry makes, and its outcome or throw.
 */
export function approvalPlugin(current, approval) {
  if (approval.service === 'shipped') {
    return {
      plugin: class ProbedApprovalService extends ApprovalService {
        request(req) {
          return current().probeApproval(req, () => super.request(req))
        }
      },
      config: { policy: approval.policy ?? 'ask' },
    }
  }
  return {
    plugin: class ScriptedApprovalService extends Service {
      constructor(ctx) {
        super(ctx, 'approval')
      }

      request(req) {
        const w = current()
        const call = w.requestCall(req)
        return w.probeApproval(req, () => perform(w, new Invocation({
          who: 'approval', stage: 'approval', call, record: w.execs.get(call) ?? null, request: req, requestSignal: req.signal ?? null,
        }), w.scenario.approval.script))
      }
    },
    config: {},
  }
}
