// Everything the adapter needs from the DSH packages that is internal, renamed, unexported or
// missing in some version, in one place. The other modules import the packages through this
// one and ask it what the installed set can do: supporting another version is a change here.
//
// What the published sets need (the set for a version is resolved by
// conformance/dsh/adapter_install.py; checked against every published @deepseek-ai/dsh-tools):
//
// | need                         | 0.0.1-rc.1                 | 0.1.0-rc.6 | 0.1.0-rc.7      | 0.1.0-rc.8 |
// |------------------------------|----------------------------|------------|-----------------|------------|
// | the staged scheduler's key   | TOOL_REGISTRY_SCHEDULER    | TOOL_RUNTIME_SCHEDULER (renamed with the class ToolRegistry -> ToolRuntime) |||
// | agent loop (profile `loop`)  | none: no dsh-agent, dsh-agent-loop, dsh-typert-protocol at 0.0.1 | rc.6 | rc.6's (no rc.7 published) | rc.8 |
// | shipped timeout policy (P70) | none (its 0.0.1-rc.3 wants a dsh-timeout 0.0.1-rc.3 never published) | none: its first 0.1.0 release is rc.8 || rc.8 |
//
// In every version (internal or unexported names the adapter relies on, found by reading the
// packages' lib/ output):
// - `ctx.codeRuntime`: the service name the run_code bridge reads its code runtime from
//   (`ctx.get("codeRuntime")`); lib/code-runtime.mjs provides it.
// - the scheduler object under the key above, with `prepare`, `dispatch`, `finalize` and
//   `finish`, through which the loop and the bridge run calls (lib/loop.mjs wraps them), and
//   the registry's `executionMode(input)` (wrapped to attribute a sub-call's classifier).
// - `tools.presentAs(mode)` on a scoped context: an agent's own presentation (P28).
// - Promise.withResolvers: called by the agent loop's construction, dsh-agent and
//   dsh-session-persistence; Node 20 lacks it (Node 22 has it), so it is polyfilled here,
//   before any package runs, and only when missing. The tool pipeline never needs it.
//
// A package the set lacks turns off what needs it: the handshake leaves the profile out, and a
// scenario that uses it is answered `skipped` saying what is missing (`versionGaps`). A package
// that is required and missing, or an API the adapter cannot drive, is `FATAL`: the adapter
// prints that one line and exits 3 (adapter.mjs; `--check` does only that).

import { AsyncLocalStorage } from 'node:async_hooks'
import { createRequire } from 'node:module'

if (typeof Promise.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers() {
      let resolve
      let reject
      const promise = new this((res, rej) => {
        resolve = res
        reject = rej
      })
      return { promise, resolve, reject }
    },
  })
}

const require = createRequire(import.meta.url)
const problems = [] // what makes the set undrivable, each a short phrase

/** The installed version of `name`, or null when it is not installed. */
export function installedVersion(name) {
  try {
    return require(`${name}/package.json`).version ?? null
  } catch {
    return null
  }
}

/**
 * The module `name`, or null when the package is not installed. A package that is installed
 * but cannot load (a dependency of its own missing, an unbuilt lib/) is a problem of the set.
 */
async function load(name, required) {
  try {
    return await import(name)
  } catch (e) {
    const absent = e?.code === 'ERR_MODULE_NOT_FOUND' && installedVersion(name) === null
    if (absent) {
      if (required) problems.push(`${name} is not installed`)
    } else {
      problems.push(`${name} ${installedVersion(name) ?? ''} cannot be loaded: ${String(e?.message ?? e).split('\n')[0]}`)
    }
    return null
  }
}

function need(mod, what, where) {
  if (mod === null) return undefined
  const value = mod[what]
  if (value === undefined) problems.push(`${where} has no export ${what}`)
  return value
}

const cordis = await load('@deepseek-ai/cordis', true)
const tools = await load('@deepseek-ai/dsh-tools', true)
const systemPrompt = await load('@deepseek-ai/dsh-system-prompt', true)
const llm = await load('@deepseek-ai/dsh-llm', true)
const scope = await load('@deepseek-ai/dsh-scope', true)
const session = await load('@deepseek-ai/dsh-session', true)
const approval = await load('@deepseek-ai/dsh-user-approval', true)
const agent = await load('@deepseek-ai/dsh-agent', false)
const agentLoop = await load('@deepseek-ai/dsh-agent-loop', false)
const timeoutPolicy = await load('@deepseek-ai/dsh-tool-call-timeout-policy', false)
const codeRuntime = await load('@deepseek-ai/dsh-code-runtime', false)

export const TOOLS_VERSION = installedVersion('@deepseek-ai/dsh-tools')
const toolsName = `@deepseek-ai/dsh-tools ${TOOLS_VERSION ?? ''}`.trim()

export const Context = need(cordis, 'Context', '@deepseek-ai/cordis')
export const Service = need(cordis, 'Service', '@deepseek-ai/cordis')
export const ToolRuntime = need(tools, 'default', toolsName)
export const defineTool = need(tools, 'defineTool', toolsName)
export const SystemPrompt = need(systemPrompt, 'default', '@deepseek-ai/dsh-system-prompt')
export const LlmRuntime = need(llm, 'default', '@deepseek-ai/dsh-llm')
export const HarnessError = need(llm, 'HarnessError', '@deepseek-ai/dsh-llm')
export const LlmAdapter = need(llm, 'LlmAdapter', '@deepseek-ai/dsh-llm')
export const createUserMessage = need(llm, 'createUserMessage', '@deepseek-ai/dsh-llm')
export const bindScopeParent = need(scope, 'bindScopeParent', '@deepseek-ai/dsh-scope')
export const createScope = need(scope, 'createScope', '@deepseek-ai/dsh-scope')
export const SessionStore = need(session, 'default', '@deepseek-ai/dsh-session')
export const SessionId = need(session, 'SessionId', '@deepseek-ai/dsh-session')
export const snapshotJsonValue = need(session, 'snapshotJsonValue', '@deepseek-ai/dsh-session')
export const ApprovalService = need(approval, 'default', '@deepseek-ai/dsh-user-approval')

/** The key of the registry's staged scheduler: renamed in 0.1.0-rc.6 with the class. */
export const SCHEDULER = tools === null ? undefined : tools.TOOL_RUNTIME_SCHEDULER ?? tools.TOOL_REGISTRY_SCHEDULER
if (tools !== null && typeof SCHEDULER !== 'symbol') {
  problems.push(`${toolsName} exports no scheduler key (TOOL_RUNTIME_SCHEDULER from 0.1.0-rc.6, TOOL_REGISTRY_SCHEDULER in 0.0.1-rc.1)`)
}
if (typeof ToolRuntime === 'function') {
  for (const method of ['execute', 'register', 'executionMode', 'presentAs', 'restrict', 'guard']) {
    if (typeof ToolRuntime.prototype[method] !== 'function') problems.push(`${toolsName}'s registry has no method ${method}`)
  }
}

// Optional parts: each is null when the set lacks it, with the reason a skip gives.
const loopParts = agent !== null && agentLoop !== null ? { registry: agent.default, loop: agentLoop.default } : null
export const AgentRegistry = loopParts?.registry ?? null
export const AgentLoop = loopParts?.loop ?? null
export const TimeoutPolicy = timeoutPolicy
export const CodeRuntime = codeRuntime?.default ?? null
const hasRunCode = tools !== null && tools.RUN_CODE_NAME === 'run_code'

/**
 * The AsyncLocalStorage instances of a deployment's agent registry (`ctx.agents`, dsh-agent's
 * `initiators` and `initiatorRuns`: the initiating agent of an async chain), or [] when the
 * set has none. Node runs a promise hook for every enabled instance on every promise made
 * anywhere in the process, so a deployment kept idle switches them off (lib/deployment.mjs).
 */
export function initiatorStores(ctx) {
  let registry
  try {
    registry = ctx.agents
  } catch {
    return []
  }
  return [registry?.initiators, registry?.initiatorRuns].filter((s) => s instanceof AsyncLocalStorage)
}

const absent = (name) => `${name} is not in this package set (beside ${toolsName})`
const GAPS = {
  loop: AgentLoop !== null ? null : absent(agentLoop === null ? '@deepseek-ai/dsh-agent-loop' : '@deepseek-ai/dsh-agent'),
  timeoutPolicy: TimeoutPolicy !== null ? null : absent('@deepseek-ai/dsh-tool-call-timeout-policy'),
  codeMode: CodeRuntime === null ? absent('@deepseek-ai/dsh-code-runtime')
    : hasRunCode ? null : `${toolsName} has no run_code bridge`,
}

/** Why the installed set cannot be driven at all (one line), or null. */
export const FATAL = problems.length === 0 ? null
  : `the adapter cannot drive ${toolsName || '@deepseek-ai/dsh-tools'}: ${problems.join('; ')}`

/** The profiles this set supports. */
export const PROFILES = ['core', 'reference', ...(GAPS.loop ? [] : ['loop']), ...(GAPS.codeMode ? [] : ['code-mode'])]

/** The handshake's features, less those the set lacks. */
export function features(all) {
  const off = new Set([
    ...(GAPS.loop ? ['loop', 'next-turn', 'pre-step', 'cancel'] : []),
    ...(GAPS.timeoutPolicy ? ['timeout-policy'] : []),
    ...(GAPS.codeMode ? ['code-mode', 'scripted-code-runtime'] : []),
  ])
  return all.filter((f) => !off.has(f))
}

/** The versions of the set's packages, for the handshake's identity. */
export function packageVersions() {
  return {
    agentLoop: installedVersion('@deepseek-ai/dsh-agent-loop'),
    timeoutPolicy: installedVersion('@deepseek-ai/dsh-tool-call-timeout-policy'),
    codeRuntime: installedVersion('@deepseek-ai/dsh-code-runtime'),
    cordis: installedVersion('@deepseek-ai/cordis'),
  }
}

function usesCodeMode(s) {
  if ((s.mode ?? 'native') !== 'native' || (s.programs ?? []).length > 0) return true
  if ((s.agents ?? []).some((a) => a.mode !== undefined && a.mode !== null && a.mode !== 'native')) return true
  if ((s.listeners ?? []).some((l) => l.event === 'tools/code-dispatch-log')) return true
  const calls = s.run?.kind === 'direct' ? (s.run.calls ?? []).map((c) => c.name) : (s.run?.blocks ?? []).map((b) => b.name)
  return calls.includes('run_code')
}

/** Why this set cannot run `scenario` (answered `skipped`), or null. */
export function versionGaps(s) {
  if (s.run?.kind === 'loop' && GAPS.loop) return `$.run.kind: the agent loop is not available: ${GAPS.loop}`
  if (s.timeoutPolicy && GAPS.timeoutPolicy) return `$.timeoutPolicy: the shipped timeout policy is not available: ${GAPS.timeoutPolicy}`
  if (GAPS.codeMode && usesCodeMode(s)) return `Code Mode is not available: ${GAPS.codeMode}`
  return null
}
