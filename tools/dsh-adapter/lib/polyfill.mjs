// Node 20 lacks Promise.withResolvers (Node 22+), which the agent loop's construction
// (FactoryOwnership), dsh-agent and dsh-session-persistence call. The tool pipeline
// itself never needs it. Installed only when missing.
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
