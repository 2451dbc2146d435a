"""Deliberately wrong implementations under test, one per mode, for the suite's own tests.

``python tests/fakes/fake_iut.py MODE [STATE]`` serves the IUT protocol with the oracle
changed in one way. Behavioral modes patch the oracle's pipeline, so they are real (wrong)
implementations; protocol modes misbehave on the wire, hostile modes on the process level
(hang, close stdout, leave children behind, ignore signals, flood stderr). With STATE, a
mode that breaks one run does it once: a restarted process finds the file and behaves.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


from dsh_conformance.oracle import loop, pipeline, serve  # noqa: E402
from dsh_conformance.kit.jsvalue import UNDEFINED  # noqa: E402
from serve_loop import first_time  # noqa: E402  (the script's own directory is on sys.path)

MODE = sys.argv[1]
# Modes that break one run do it once: a restarted process finds this file and behaves.
ONCE = sys.argv[2] if len(sys.argv) > 2 else None


def once() -> bool:
    return first_time(ONCE)


def body_after_guard_denial() -> None:
    """Ignores guard denials: the body runs after a guard denied (P3, P46, P48)."""
    original = pipeline._guards

    def guards(w, rec):
        original(w, rec)
        return UNDEFINED
    pipeline._guards = guards


def finalize_before_post() -> None:
    """Runs finalizeContent before post-execute (P1 stage order)."""

    async def finalize(w, rec, route):
        f = pipeline.finish(w, rec, route.result)
        if route.kind == "post":
            await pipeline.post(w, rec, f)
        return f
    pipeline.finalize = finalize
    loop.finalize = finalize


def call_without_result() -> None:
    """Drops the tool/result of the first call of a batch (P105)."""
    original = loop._tool_result

    def tool_result(w, st, block, result):
        if not getattr(st, "fake_dropped", False):  # the first result of each batch
            st.fake_dropped = True
            return
        original(w, st, block, result)
    loop._tool_result = tool_result


def presents_in_pipeline() -> None:
    """Renders the pending card from inside the pipeline: presentCall runs as the call
    enters (P14), its throw swallowed."""
    from dsh_conformance.kit.jsvalue import Thrown
    from dsh_conformance.kit.script import Invocation, perform_sync

    original = pipeline.entry

    def entry(w, inp):
        rec, route = original(w, inp)
        tool = w.view(rec.agent, rec.name)
        if tool is not None and tool.presentCall is not None:
            try:
                perform_sync(w, Invocation(who=f"{tool.ref}.presentCall", stage="presentCall", record=None,
                                           call_id=rec.callId), tool.presentCall)
            except Thrown:
                pass
        return rec, route
    pipeline.entry = entry


PATCHES = {"guard-bypass": body_after_guard_denial, "finalize-first": finalize_before_post,
           "no-tool-result": call_without_result, "presents-in-pipeline": presents_in_pipeline}


def _child(seconds: int) -> None:
    """A process of our own that outlives us unless our process group is ended. It keeps
    our stdout open (a worker or a shell wrapper's child does)."""
    subprocess.Popen(["sleep", str(seconds)])


def _write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _nested(depth: int) -> object:
    v: object = 1
    for _ in range(depth):
        v = {"a": v}
    return v


def hostile(msg: dict, runs: int, reply: dict) -> dict | None:
    """Process- and wire-level misbehavior on run ``runs``. Returns the reply to send, or
    None when nothing (more) is to be sent for this run."""
    if MODE == "close-stdout":  # answers the handshake, then closes its stdout and keeps running
        os.close(1)
        time.sleep(3600)
    if MODE == "orphan-child" and runs == 2 and once():  # exits, a child still holding the pipe
        _child(300)
        os._exit(71)
    if MODE == "never-answers":
        time.sleep(3600)
    if MODE == "crash-always" or (MODE == "unrestartable" and once()):  # once: the restart fails
        os._exit(72)
    if MODE == "segfault" and runs == 2 and once():
        os.kill(os.getpid(), signal.SIGSEGV)
    if MODE == "sigkill" and runs == 2 and once():  # as the OOM killer ends it
        os.kill(os.getpid(), signal.SIGKILL)
    if MODE == "huge-line" and runs == 2 and once():
        _write(b"x" * (50 * 1024 * 1024) + b"\n")
        return None
    if MODE == "partial-line" and runs == 2 and once():
        _write(b'{"seq": ' + str(msg["seq"]).encode())
        time.sleep(3600)
    if MODE == "stderr-flood" and runs == 2:
        chunk = b"e" * (1024 * 1024)
        for _ in range(100):
            sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.write(b"\nthe end of a flood\n")
        sys.stderr.buffer.flush()
    if MODE == "doubled" and runs == 2 and once():
        _write((json.dumps(reply) + "\n").encode())  # the same answer twice: the second is read for run 3
    if MODE == "deep-json" and runs == 2 and once():
        _write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        return None
    if MODE == "deep-trace" and runs == 2 and once() and "trace" in reply:
        reply["trace"]["warnings"] = [_nested(300)]
    if MODE == "non-utf8" and runs == 2 and once():
        _write(b'{"seq": 1, "\xff\xfe": 1}\n')
        return None
    if MODE == "big-number" and runs == 2 and once():
        _write(b'{"seq": ' + b"9" * 400 + b"}\n")
        return None
    if MODE == "errored-all" or (MODE == "errored-one" and runs == 2):
        return {"seq": msg["seq"], "errored": True, "message": f"fake-{MODE} cannot run this"}
    if MODE in ("slow", "slow-escapes") and runs == 1:
        time.sleep(float(os.environ.get("FAKE_SLOW_SECONDS", "3")))
    return reply


def main() -> int:
    if MODE in PATCHES:
        PATCHES[MODE]()
    if MODE == "exit-at-start" or (MODE == "unrestartable" and ONCE and os.path.exists(ONCE)):
        return 9
    if MODE == "ignore-term":  # neither SIGTERM nor the stop command ends it
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if MODE == "worker":  # a helper process of its own, for its whole life
        _child(300)
    if MODE in ("escapes", "slow-escapes"):  # descendants that leave its process group and its session
        for leave in ("os.setpgid(0, 0)", "os.setsid()"):
            subprocess.Popen([sys.executable, "-c", f"import os, time; {leave}; time.sleep(3600)"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        if MODE == "slow-escapes":
            os.environ["FAKE_SLOW_SECONDS"] = "3600"
    runs = 0
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "stop":
            if MODE == "ignore-term":
                time.sleep(3600)
            return 0
        if msg["cmd"] == "start":
            if MODE == "hang-at-start":
                time.sleep(3600)
            if MODE == "slow-start":
                time.sleep(2)
            reply = serve.started()
            reply["implementation"]["name"] = f"fake-{MODE}"
            if MODE == "wrong-type":  # a handshake field of the wrong JSON type (FAKE_WRONG)
                wrong = os.environ.get("FAKE_WRONG", "")
                if wrong == "profiles":
                    reply["profiles"] = ["core", 7]
                elif wrong == "name":
                    reply["implementation"]["name"] = 42
                elif wrong == "version":
                    reply["version"] = True
            if MODE == "bad-handshake":
                reply = {"hello": "world"}
            if MODE == "no-loop":  # supports every profile but loop (as dsh-tools 0.0.1-rc.1 does)
                reply["profiles"] = [p for p in reply["profiles"] if p != "loop"]
            if MODE == "no-core":  # claims profiles without core, which every profile needs (section 2)
                reply["profiles"] = [p for p in reply["profiles"] if p != "core"]
        else:
            runs += 1
            reply = serve.answer(msg["seq"], msg["scenario"])
            reply = hostile(msg, runs, reply)
            if reply is None:
                continue
            if MODE == "mutable-result" and "trace" in reply:
                for r in reply["trace"]["results"]:
                    r["frozen"] = False
            elif MODE == "thawed-observations" and "trace" in reply:  # a flag at the end of a long item
                for o in reply["trace"]["observations"]:
                    if isinstance(o.get("value"), dict) and o["value"].get("frozen") is True:
                        o["value"]["frozen"] = False
            elif MODE == "crash" and runs == 2 and once():
                os._exit(70)
            elif MODE == "hang" and runs == 2 and once():
                time.sleep(3600)
            elif MODE == "garbage" and runs == 2 and once():
                sys.stdout.write("Traceback (most recent call last): oops\n")
                sys.stdout.flush()
                continue
            elif MODE == "drops-owned-events" and "trace" in reply:
                reply["trace"]["events"] = [e for e in reply["trace"]["events"] if e["type"] != "todo/write"]
            elif MODE == "wrong-type" and runs == 2:  # an answer field of the wrong JSON type (FAKE_WRONG)
                wrong = os.environ.get("FAKE_WRONG", "")
                if wrong == "seq":
                    reply["seq"] = str(msg["seq"])
                elif wrong == "seq-bool" and msg["seq"] == 1:
                    reply["seq"] = True
                elif wrong == "trace":
                    reply["trace"] = []
                elif wrong == "skipped":
                    reply = {"seq": msg["seq"], "skipped": "true", "reason": "no"}
                elif wrong == "errored":
                    reply = {"seq": msg["seq"], "errored": 1, "message": "no"}
                elif wrong == "reason":
                    reply = {"seq": msg["seq"], "skipped": True, "reason": ["no"]}
            elif MODE == "big-trace" and "trace" in reply:  # a trace of FAKE_TRACE_MB megabytes, diverging
                big = "x" * int(float(os.environ.get("FAKE_TRACE_MB", "20")) * 1024 * 1024)
                for r in reply["trace"]["results"][:1]:
                    r["result"] = {"content": [{"type": "text", "text": big}]}
            elif MODE == "wrong-seq":
                reply["seq"] = msg["seq"] + 1
            elif MODE == "invalid-trace" and "trace" in reply:
                for o in reply["trace"]["observations"]:
                    o.pop("stage", None)
            elif MODE == "skip-all":
                reply = {"seq": msg["seq"], "skipped": True, "reason": "this fake cannot express anything"}
        if MODE == "wtf8-out":
            # Lone surrogates written raw, as a WTF-8 (generalized UTF-8) writer does.
            sys.stdout.flush()
            sys.stdout.buffer.write((json.dumps(reply, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass"))
            sys.stdout.buffer.flush()
            continue
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if MODE == "deaf" and msg["cmd"] == "start":  # never reads its input again
            time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
