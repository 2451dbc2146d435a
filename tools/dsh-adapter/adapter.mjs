#!/usr/bin/env node
// dsh-conformance IUT adapter: the JS kit's protocol loop (kit/protocol.mjs) serving the
// implementation that binding.mjs binds. Here the binding is the real DeepSeek Harness tool
// pipeline (@deepseek-ai/dsh-tools, pinned at 0.1.0-rc.8) and agent loop; in a directory
// written by `dsh-conformance kit js DIR` it is the skeleton a port fills in. This file and
// kit/ are the same in both.
//
// Usage: node adapter.mjs           speaks the IUT protocol v1 on stdin/stdout
//        node adapter.mjs --check   prints the handshake as one JSON line, or the one line
//                                   saying why the binding cannot drive its implementation (exit 3)

import * as binding from './binding.mjs'
import { serve } from './kit/protocol.mjs'

serve(binding)
