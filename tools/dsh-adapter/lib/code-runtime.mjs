// The scenario's code runtime, registered as the real `ctx.codeRuntime` service (the abstract
// `CodeRuntime` of @deepseek-ai/dsh-code-runtime): the run_code bridge of dsh-tools hands it
// `{program, bindings, signal}`, and the kit's program interpreter (kit/program.mjs) runs the
// scenario's program of that name against the `tools` namespace.

import { runProgram } from '../kit/program.mjs'
import { CodeRuntime, snapshotJsonValue } from './compat.mjs'

/** The cordis plugin that provides `ctx.codeRuntime`, running programs of the scenario `current()` returns. */
export function codeRuntimePlugin(current) {
  return class ScriptedCodeRuntime extends CodeRuntime {
    language = 'typescript' // the bridge needs a language it has an SDK for
    isolation = 'scripted'

    run(request) {
      return runProgram(current(), request, snapshotJsonValue)
    }
  }
}
