"""Hypothesis strategies for whole scenario documents, and the measured rule coverage.

``scenarios.scenarios(profiles)`` draws plain JSON dicts that ``oracle.parse_scenario`` accepts,
from the full scenario language (``kit/scenario.py``), weighted toward the cases that
break implementations: malformed decisions, throws of every kind in every participant,
JS-only values (spec section 3.11) at every boundary, identity and result mutation
attempts, aborts at every checkpoint, unknown and vanishing tools, invalid arguments,
approval in every state, scoped and global listeners and guards on agent chains, retries,
signal replacement, the timeout policy, direct multi-call runs and loop batches, the work a
body does (filesystem intent waterfalls it dispatches, session events it appends, P71) and
a client's view of a loop step through ``presentCall``/``presentResult`` (P14). A third of
the draws are swarm draws: a random subset of further foci turned on at once, so that rare
combinations meet; the wide strategy (``scenarios.examples(wide=True)``) adds the values the spec
turns into text (the ``values`` focus, see ``WIDE_ONLY``).

Every drawn scenario

- parses;
- runs to an end in the oracle. Suspending steps are placed where something settles them
  (``await-signal`` after aborting every signal it could wait on, or under a deadline;
  ``gate`` only in loop bodies), on every path an implementation could take. A loop gate order or a wait that still never settles is repaired
  deterministically (``settle``), so no draw is ever rejected for it;
- cites the rules it exercises (``rules``), computed from the oracle's trace by ``citation``.

Shrinking gives small, readable scenarios: every choice is a ``one_of`` whose first branch
is the plain case (no listener, delegate, allow, abstain, return a small value), and every
list is short.

``draws.measure_coverage(n, seed)`` counts, over ``n`` drawn examples, how many exercised each
rule of the requested profiles and each trace observation kind ``(stage, what)``.

The modules, each a kind of data, lower ones first (none imports the package itself, so
importing one module loads only what it needs):

- ``basics``: weighted choice, ``reused`` strategy builders, content blocks, messages, errors;
- ``value_shapes``: getters, shared references and Error shapes (P9, P13, P23);
- ``values``: what participants hand across boundaries, thrown values, a body's work;
- ``roles``: participant roles, write attempts and side steps, ``behaviors``;
- ``decisions``: decisions, authored results, approval outcomes, guard denials;
- ``terminals``: how each role's script ends, plain and for the focused participant;
- ``participants``: tools, listeners, guards, approval, agents, and the foci;
- ``runs``: direct calls and loop steps;
- ``code_mode``: Code Mode's programs and participants (section 5.15);
- ``recipes``: the edits a focus makes to a drawn document;
- ``script_calls``: calls of a tool of their own, drawn last, that meet the interpreter's rarer situations;
- ``side_calls``: direct calls of a tool of their own appended last to a direct run;
- ``loop_side``: tool-call blocks of tools of their own appended last to a loop run;
- ``settle``: running a document in the oracle to an end;
- ``citation``: the rules a run exercises, and a document with its ``rules`` set;
- ``scenarios``: whole documents (``scenario_docs``, ``examples``, ``scenarios``);
- ``draws``: independent seeded draws and the coverage they measure.
"""
