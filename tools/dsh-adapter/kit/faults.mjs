// Failures of the adapter or of the scenario, as opposed to JS throws that belong to the
// run (a participant's scripted throw, a failed write to a frozen object, ...).

/** The scenario cannot be expressed with the real package: answered `skipped`. */
export class Unsupported extends Error {
  constructor(message) {
    super(message)
    this.name = 'Unsupported'
  }
}

/**
 * The scenario cannot be run to an end, or the adapter broke inside a participant: answered
 * `errored`. A fault raised inside a participant would otherwise be swallowed by the
 * pipeline as an ordinary participant throw, so the world remembers the first one and the
 * run is answered `errored` whatever trace it produced.
 */
export class AdapterFault extends Error {
  constructor(message) {
    super(message)
    this.name = 'AdapterFault'
  }
}

/**
 * A seam of the binding that is still the skeleton's (`dsh-conformance kit js` writes each
 * one throwing this): in a run it is answered `errored` naming the seam; in the handshake it
 * is the one line of an adapter that cannot start (exit 3).
 */
export class NotImplemented extends Error {
  constructor(seam) {
    super(`binding.mjs: ${seam}() is not implemented yet (fill in the skeleton's seam)`)
    this.name = 'NotImplemented'
  }
}
