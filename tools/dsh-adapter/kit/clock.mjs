// Virtual time: a run never waits on the wall clock, so it is fast and its trace is the
// same on every machine.
//
// While a scenario runs, the global setTimeout/clearTimeout are replaced by a clock whose
// time only advances when nothing else can happen: `settle` drains every queued microtask
// (one setImmediate turn), and only when the run is still pending fires the earliest timer
// (ties in scheduling order), exactly as the oracle's scheduler does. `sleep` steps and the
// shipped timeout policy's deadline both run on this clock.

export class NeverSettles extends Error {
  constructor() {
    super('the scenario never settles: every task waits on something that never happens')
    this.name = 'NeverSettles'
  }
}

export class Clock {
  now = 0
  seq = 0
  timers = []

  /** A promise that resolves `ms` milliseconds of virtual time from now. */
  sleep(ms) {
    return new Promise((resolve) => { this.setTimeout(resolve, ms) })
  }

  setTimeout(fn, ms = 0, ...args) {
    const delay = Number.isFinite(Number(ms)) && Number(ms) > 0 ? Number(ms) : 0
    const timer = { due: this.now + delay, seq: ++this.seq, fn: () => fn(...args), cancelled: false }
    this.timers.push(timer)
    this.timers.sort((a, b) => a.due - b.due || a.seq - b.seq)
    return new TimerHandle(timer)
  }

  clearTimeout(handle) {
    if (handle instanceof TimerHandle) handle.timer.cancelled = true
  }

  /** Fire the earliest pending timer; false when none is pending. */
  fireNext() {
    while (this.timers.length > 0) {
      const timer = this.timers.shift()
      if (timer.cancelled) continue
      this.now = Math.max(this.now, timer.due)
      timer.fn()
      return true
    }
    return false
  }

  /** Replace the global timer functions by this clock's until `restore()`. */
  install() {
    const saved = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout }
    globalThis.setTimeout = (fn, ms, ...args) => this.setTimeout(fn, ms, ...args)
    globalThis.clearTimeout = (handle) => this.clearTimeout(handle)
    return () => {
      globalThis.setTimeout = saved.setTimeout
      globalThis.clearTimeout = saved.clearTimeout
    }
  }
}

class TimerHandle {
  constructor(timer) { this.timer = timer }
  ref() { return this }
  unref() { return this }
  hasRef() { return false }
  refresh() { return this }
  [Symbol.toPrimitive]() { return this.timer.seq }
}

const turn = () => new Promise((resolve) => { setImmediate(resolve) })

/**
 * Drive `promise` to settlement on `clock`: drain microtasks, and advance virtual time
 * only while the run is still pending. Rejects with NeverSettles when nothing is left to
 * happen and the promise is still pending.
 */
export async function settle(promise, clock) {
  let state = 'pending'
  let value
  promise.then((v) => { state = 'fulfilled'; value = v }, (e) => { state = 'rejected'; value = e })
  let idle = 0
  for (;;) {
    await turn()
    if (state !== 'pending') break
    if (clock.fireNext()) { idle = 0; continue }
    // Nothing scheduled on the clock: allow a few turns for anything else the platform
    // queued (I/O callbacks, immediates), then give up.
    if (++idle > 20) throw new NeverSettles()
  }
  // Let reactions queued by the settlement itself run (e.g. observers' rejection reports).
  await turn()
  if (state === 'rejected') throw value
  return value
}
