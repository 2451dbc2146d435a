// A deployment: one cordis Context with the real plugins loaded, kept for every scenario
// that asks for the same configuration, instead of a fresh Context per scenario.
//
// Loading the plugins (and disposing them afterwards) cost about as much as running a
// scenario. What varies per scenario lives in a fork of the deployment (the adapter's own
// plugin, `w.host`): every registration of the scenario (tools, listeners, guards, agents
// and their scopes, the probes, the scripted model, the warning exporter) is made through
// it, and disposing the fork at the end removes them all, as the research note advises
// ("reuse one and dispose the listeners"). What the deployment loads once is what a
// scenario only configures: the tool runtime's mode and overlap cap, the approval service
// and its policy, the timeout policy, the loop's plugins and pool size, and whether a code
// runtime is loaded. The deployment's services that act for a scenario (the scripted code
// runtime, a custom approval service, the instrumented scheduler) ask `current()` for the
// scenario running now. tests/test_dsh_adapter.py runs the corpus both ways and compares
// the traces byte for byte.
//
// A deployment is retired (not reused) after a scenario that did not end cleanly (an
// adapter fault, a skip, a run that never settled): whatever that run left behind goes
// with its Context, as it did with a fresh one.

import { AgentLoop, AgentRegistry, CodeRuntime, Context, LlmRuntime, SessionStore, SystemPrompt, TimeoutPolicy, ToolRuntime, initiatorStores } from './compat.mjs'
import { Clock, settle } from '../kit/clock.mjs'
import { codeRuntimePlugin } from './code-runtime.mjs'
import { instrumentScheduler } from './loop.mjs'
import { approvalPlugin } from './registrations.mjs'

/** The store value around the no-op that switches a resting store on again (`Deployment.wake`). */
const WAKING = Symbol('waking')

/** An option only when the scenario sets it. */
function given(key, value) {
  return value === null ? {} : { [key]: value }
}

/** What a scenario configures of the deployment it runs on (the key deployments are kept by). */
export function configurationOf(scenario) {
  const run = scenario.run ?? {}
  const loop = run.kind === 'loop'
  const approval = scenario.approval
  return {
    loop,
    // Limits the scenario leaves out are left to the package's own defaults (P20, P121),
    // so that a case about a default checks the package's, not the adapter's.
    maxParallelToolCalls: loop ? run.maxParallelToolCalls ?? null : null,
    mode: scenario.mode ?? 'native',
    maxParallelSubCalls: scenario.maxParallelSubCalls ?? null,
    codeRuntime: scenario.codeRuntime !== false && CodeRuntime !== null,
    approval: approval ? (approval.service === 'shipped' ? { service: 'shipped', policy: approval.policy ?? 'ask' } : { service: 'custom' }) : null,
    timeoutPolicy: Boolean(scenario.timeoutPolicy),
  }
}

export class Deployment {
  constructor(config) {
    this.config = config
    this.ctx = null
    this.world = null // the World of the scenario running now
    this.runs = 0
    this.stores = [] // the agent registry's AsyncLocalStorage instances (loop deployments)
    this.resting = false // while kept idle, those stores are off (`rest`)
    const deployment = this
    // One plugin object for every fork: cordis keeps a record per plugin it has seen. It
    // injects what the scenario registers through: the scripted model and the loop agent
    // in a loop run.
    const inject = config.loop ? ['tools', 'llm', 'agentLoop'] : ['tools']
    this.fork = { name: 'dsh-conformance-adapter', inject, apply(c) { deployment.world.host = c } }
  }

  /** The World of the scenario running now (the services' view of "this scenario"). */
  current() {
    return this.world
  }

  /**
   * Load the plugins, in the order a fresh Context loaded them, on a clock of its own (a
   * plugin that set a timer while loading would find virtual time, as before). Returns
   * false when the tool runtime did not start (the scenario's answer says so).
   */
  async load() {
    const c = this.config
    const ctx = this.ctx = new Context()
    const current = () => this.current()
    const clock = new Clock()
    const restore = clock.install()
    try {
      await settle((async () => {
        if (c.loop) {
          await ctx.plugin(LlmRuntime)
          await ctx.plugin(SessionStore)
        }
        await ctx.plugin(SystemPrompt)
        if (c.codeRuntime) await ctx.plugin(codeRuntimePlugin(current))
        await ctx.plugin(ToolRuntime, { mode: c.mode, ...given('maxParallelSubCalls', c.maxParallelSubCalls) })
        if (c.approval) {
          const { plugin, config } = approvalPlugin(current, c.approval)
          await ctx.plugin(plugin, config)
        }
        // P70: the shipped timeout policy is a plugin's tools/execute listener, installed
        // before the scenario's own listeners.
        if (c.timeoutPolicy) await ctx.plugin(TimeoutPolicy)
        if (c.loop) {
          await ctx.plugin(AgentRegistry)
          await ctx.plugin(AgentLoop, { agents: [], ...given('maxParallelToolCalls', c.maxParallelToolCalls) })
        }
      })(), clock)
    } finally {
      restore()
    }
    if (ctx.tools === undefined) return false
    // The loop and the run_code bridge drive calls through the staged scheduler: it tells
    // which call each stage runs for, and the sub-calls' final results.
    instrumentScheduler(current, ctx.tools)
    if (c.loop) this.stores = initiatorStores(ctx)
    return true
  }

  /**
   * Kept idle after a clean run: the agent registry's stores are switched off. Every enabled
   * AsyncLocalStorage of the process costs a hook call on every promise made anywhere (and
   * the adapter keeps one loop deployment per configuration, dozens in a run), but only code
   * of this deployment reads these stores, and none runs while it is idle: the protocol runs
   * one scenario at a time, a run's services act through `current()` (null until the next
   * `enter`), and a chain an earlier run left pending waits on this deployment's objects or
   * on that run's virtual clock (its timers are dropped with it; the packages call the global
   * setTimeout when they set one, and none keeps the real one), so it can only go on once
   * this deployment runs again. Stores already set on async resources stay set (`disable`
   * only stops propagation and reads), and `wake` switches them on again before this
   * deployment's code runs again, so every read made by its code sees what it saw with the
   * stores never off.
   */
  rest() {
    for (const store of this.stores) store.disable()
    this.resting = true
  }

  /** Before a run on a kept deployment: its stores on again (`run` enables a store; the store around the no-op is restored). */
  wake() {
    if (!this.resting) return
    for (const store of this.stores) store.run(WAKING, () => {})
    this.resting = false
  }

  /** Start scenario `w` on this deployment: its fork (`w.host` once applied; await the fiber). */
  enter(w) {
    this.world = w
    this.runs += 1
    return this.ctx.plugin(this.fork)
  }

  /** End the scenario: its fork and everything registered through it are disposed. */
  async leave(fiber) {
    try {
      await fiber?.dispose?.()
    } finally {
      this.world = null
    }
  }

  dispose() {
    try {
      const done = this.ctx?.fiber?.dispose?.()
      if (done && typeof done.catch === 'function') done.catch(() => {})
    } catch { /* a broken teardown must not break the next run */ }
  }
}

/**
 * The deployments kept, by configuration. With DSH_ADAPTER_FRESH=1 none is kept: every
 * scenario loads its own, as the adapter did before (for comparing the two).
 */
export class Deployments {
  constructor(reuse = process.env.DSH_ADAPTER_FRESH !== '1') {
    this.kept = new Map()
    this.reuse = reuse
  }

  /** A loaded deployment for `scenario`'s configuration, or null when the tool runtime does not start. */
  async acquire(scenario) {
    const config = configurationOf(scenario)
    const key = JSON.stringify(config)
    const kept = this.kept.get(key)
    if (kept !== undefined) {
      this.kept.delete(key) // in use: a nested or concurrent run gets a deployment of its own
      kept.wake()
      return { key, deployment: kept }
    }
    const deployment = new Deployment(config)
    if (!(await deployment.load())) {
      deployment.dispose()
      return { key, deployment: null }
    }
    return { key, deployment }
  }

  /** Give a deployment back after a clean run, or retire it. */
  release({ key, deployment }, clean) {
    if (deployment === null) return
    if (clean && this.reuse && !this.kept.has(key)) {
      deployment.rest()
      this.kept.set(key, deployment)
    } else {
      deployment.dispose()
    }
  }
}
