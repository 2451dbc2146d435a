// The DSH registrations of the scenario's participants: the kit's scripted functions
// (kit/participants.mjs) put into the shapes @deepseek-ai/dsh-tools takes (a raw
// ToolDefinition or a defineTool tool, with the tools DSL for a defineTool's schemas), and
// the approval plugin (the shipped ApprovalService, or a cordis Service for the scenario's
// custom one), both wrapped by the approval probe.

import { Unsupported } from '../kit/faults.mjs'
import { approvalRequest, toolFunctions } from '../kit/participants.mjs'
import { ApprovalService, Service, defineTool } from './compat.mjs'

// ------------------------------------------------------------------------------- tools

/** The real tool definition for a declared tool (raw, or through defineTool). */
export function toolDefinition(w, t) {
  const ref = t.id ?? t.name
  const output = t.output ?? {}
  const { execute, render, presentationMeta, finalizeContent, isConcurrencySafe, presentCall, presentResult } = toolFunctions(w, t)
  const extra = {}
  if (finalizeContent) extra.finalizeContent = finalizeContent
  if (isConcurrencySafe) extra.isConcurrencySafe = isConcurrencySafe
  if (t.timeoutMs !== undefined && t.timeoutMs !== null) extra.timeoutMs = t.timeoutMs
  if (presentCall) extra.presentCall = presentCall
  if (presentResult) extra.presentResult = presentResult
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
        ...(presentationMeta ? { presentationMeta } : {}),
      },
      execute,
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
      ...(presentationMeta ? { presentationMeta } : {}),
    },
    execute,
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
  const request = approvalRequest(current)
  return {
    plugin: class ScriptedApprovalService extends Service {
      constructor(ctx) {
        super(ctx, 'approval')
      }

      request(req) {
        return request(req)
      }
    },
    config: {},
  }
}
