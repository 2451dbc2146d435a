// The scenario language the kit interprets: every field of a scenario must be one it knows.
// Anything else (a newer scenario language) is answered `skipped` with its JSON path and the
// reason, never approximated silently. What the implementation cannot express of a known
// field is the binding's to say (binding.mjs `unsupported`), checked after this.

import { Unsupported } from './faults.mjs'

const KEYS = {
  scenario: ['$format', 'id', 'title', 'rules', 'seed', 'mode', 'codeRuntime', 'maxParallelSubCalls', 'programs', 'agents',
    'tools', 'listeners', 'guards', 'approval', 'timeoutPolicy', 'run', 'expect', 'getters'],
  program: ['id', 'steps', 'afterSettle'],
  agent: ['id', 'parent', 'mode', 'openTurn', 'restrict'],
  restrict: ['allow', 'deny'],
  tool: ['id', 'name', 'define', 'description', 'parameters', 'output', 'body', 'finalizeContent', 'concurrencySafe',
    'timeoutMs', 'presentCall', 'presentResult', 'scope', 'registered'],
  output: ['schema', 'render', 'presentationMeta'],
  listener: ['id', 'event', 'scope', 'global', 'prepend', 'registered', 'script'],
  guard: ['id', 'scope', 'registered', 'script'],
  getter: ['id', 'script'],
  shipped: ['service', 'policy'],
  custom: ['service', 'script'],
  direct: ['kind', 'calls'],
  call: ['callId', 'name', 'arguments', 'agent', 'rootCallId', 'parent', 'aborted', 'abortAt', 'getters'],
  loop: ['kind', 'agent', 'blocks', 'finish', 'maxParallelToolCalls', 'aborted', 'release', 'present', 'cancelAt', 'nextTurn'],
  cancelAt: ['ms', 'keepInbox', 'reason'],
  block: ['id', 'name', 'arguments'],
  behavior: ['steps', 'byCall', 'perInvocation'],
}

const STEP_KEYS = {
  next: ['catch'],
  return: ['value'],
  'return-next': [],
  throw: ['value'],
  mutate: ['target', 'op', 'value', 'catch'],
  'set-signal': ['signal'],
  abort: ['signal', 'reason'],
  'defer-context': ['message'],
  'conclude-turn': [],
  'await-signal': [],
  sleep: ['ms'],
  gate: [],
  register: ['ref'],
  unregister: ['ref'],
  inject: ['message'],
  steer: ['message'],
  observe: ['what', 'name'],
  dispatch: ['event', 'target', 'catch'],
  append: ['type', 'data'],
  keep: ['what', 'name'],
  'return-kept': ['name'],
  cancel: ['keepInbox', 'reason'],
}

const EVENTS = ['tools/pre-execute', 'tools/execute', 'tools/post-execute', 'tools/result', 'approval/request',
  'fs/write-intent', 'fs/edit-intent', 'tools/code-dispatch-log', 'agent/pre-step']

// The steps of a run_code program (kit/scenario.py Program), run by kit/program.mjs.
const PROGRAM_STEP_KEYS = {
  call: ['tool', 'arguments', 'as', 'catch'],
  await: ['handle', 'catch'],
  log: ['text'],
  return: ['value'],
  throw: ['message'],
  fail: ['kind', 'message'],
  reject: ['thrown'],
  sleep: ['ms'],
}

function programSteps(steps, path) {
  ;(steps ?? []).forEach((step, i) => {
    if (step === null || typeof step !== 'object' || !Object.hasOwn(PROGRAM_STEP_KEYS, step.do)) {
      throw new Unsupported(`${path}[${i}]: unknown program step ${JSON.stringify(step?.do)}`)
    }
    for (const key of Object.keys(step)) {
      if (key !== 'do' && !PROGRAM_STEP_KEYS[step.do].includes(key)) throw new Unsupported(`${path}[${i}].${key}: unknown field of a '${step.do}' program step`)
    }
  })
}

function keys(obj, kind, path) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new Unsupported(`${path}: expected an object`)
  for (const key of Object.keys(obj)) {
    if (!KEYS[kind].includes(key)) throw new Unsupported(`${path}.${key}: unknown scenario field (a newer scenario language?)`)
  }
}

function behavior(b, path) {
  if (b === undefined || b === null) return
  if (Array.isArray(b)) {
    b.forEach((step, i) => stepKeys(step, `${path}[${i}]`))
    return
  }
  keys(b, 'behavior', path)
  ;(b.steps ?? []).forEach((step, i) => stepKeys(step, `${path}.steps[${i}]`))
  for (const [call, steps] of Object.entries(b.byCall ?? {})) steps.forEach((step, i) => stepKeys(step, `${path}.byCall.${call}[${i}]`))
  ;(b.perInvocation ?? []).forEach((steps, n) => steps.forEach((step, i) => stepKeys(step, `${path}.perInvocation[${n}][${i}]`)))
}

function stepKeys(step, path) {
  if (step === null || typeof step !== 'object' || !Object.hasOwn(STEP_KEYS, step.do)) {
    throw new Unsupported(`${path}: unknown step ${JSON.stringify(step?.do)}`)
  }
  for (const key of Object.keys(step)) {
    if (key !== 'do' && !STEP_KEYS[step.do].includes(key)) throw new Unsupported(`${path}.${key}: unknown field of a '${step.do}' step`)
  }
}

/** Throws Unsupported when the scenario has a field the kit does not know. */
export function checkLanguage(s) {
  keys(s, 'scenario', '$')
  ;(s.programs ?? []).forEach((p, i) => {
    keys(p, 'program', `$.programs[${i}]`)
    programSteps(p.steps, `$.programs[${i}].steps`)
    programSteps(p.afterSettle, `$.programs[${i}].afterSettle`)
  })
  ;(s.agents ?? []).forEach((a, i) => {
    keys(a, 'agent', `$.agents[${i}]`)
    if (a.restrict) keys(a.restrict, 'restrict', `$.agents[${i}].restrict`)
  })
  ;(s.tools ?? []).forEach((t, i) => {
    const path = `$.tools[${i}]`
    keys(t, 'tool', path)
    if (t.output) keys(t.output, 'output', `${path}.output`)
    for (const name of ['body', 'finalizeContent', 'concurrencySafe', 'presentCall', 'presentResult']) behavior(t[name], `${path}.${name}`)
    for (const name of ['render', 'presentationMeta']) behavior(t.output?.[name], `${path}.output.${name}`)
  })
  ;(s.listeners ?? []).forEach((l, i) => {
    keys(l, 'listener', `$.listeners[${i}]`)
    if (!EVENTS.includes(l.event)) throw new Unsupported(`$.listeners[${i}].event: unknown event ${JSON.stringify(l.event)}`)
    behavior(l.script, `$.listeners[${i}].script`)
  })
  ;(s.guards ?? []).forEach((g, i) => {
    keys(g, 'guard', `$.guards[${i}]`)
    behavior(g.script, `$.guards[${i}].script`)
  })
  ;(s.getters ?? []).forEach((g, i) => {
    keys(g, 'getter', `$.getters[${i}]`)
    behavior(g.script, `$.getters[${i}].script`)
  })
  if (s.approval) {
    if (s.approval.service === 'shipped') keys(s.approval, 'shipped', '$.approval')
    else if (s.approval.service === 'custom') {
      keys(s.approval, 'custom', '$.approval')
      behavior(s.approval.script, '$.approval.script')
    } else throw new Unsupported(`$.approval.service: unknown service ${JSON.stringify(s.approval.service)}`)
  }
  const run = s.run
  if (run?.kind === 'direct') {
    keys(run, 'direct', '$.run')
    ;(run.calls ?? []).forEach((c, i) => keys(c, 'call', `$.run.calls[${i}]`))
  } else if (run?.kind === 'loop') {
    keys(run, 'loop', '$.run')
    ;(run.blocks ?? []).forEach((b, i) => keys(b, 'block', `$.run.blocks[${i}]`))
    if (run.cancelAt) keys(run.cancelAt, 'cancelAt', '$.run.cancelAt')
  } else {
    throw new Unsupported(`$.run.kind: unknown run kind ${JSON.stringify(run?.kind)}`)
  }
}
