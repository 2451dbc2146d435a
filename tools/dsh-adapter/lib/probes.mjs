// The probes of kit/probes.mjs installed on a cordis context: each a global listener,
// prepended, kept in front of every scenario listener (`reseat` after a prepended
// registration). See kit/probes.mjs for why they change nothing they observe.

import { resultProbe, waterfallProbe } from '../kit/probes.mjs'

export function installProbes(w, ctx) {
  const disposers = new Map()

  const install = (event) => {
    const fn = event === 'tools/result' ? resultProbe(w) : waterfallProbe(w, event)
    disposers.set(event, ctx.on(event, fn, { prepend: true, global: true }))
  }

  const events = ['tools/pre-execute', 'tools/execute', 'tools/post-execute', 'tools/result']
  for (const event of events) install(event)

  return {
    /** Move the probe of `event` in front of every listener again. */
    reseat(event) {
      if (!disposers.has(event)) return
      disposers.get(event)()
      install(event)
    },
  }
}
