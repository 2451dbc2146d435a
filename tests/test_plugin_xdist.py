"""The pytest plugin under pytest-xdist (issue 25): ``pytest --dsh-impl CMD -n N`` deals the
corpus cases and the seeds of ``--dsh-seeds A-B`` to N workers, each with an implementation
of its own; the README's recipe for execnet workers on other hosts, tried on loopback: a
second interpreter (``--tx popen//python=...``) and a socket gateway (execnet's
``socketserver``) acting as another host."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .hang_guards import wait_until

pytestmark = pytest.mark.rules("P46")

PYTHON = sys.executable


def _impl(tmp_path: Path) -> str:
    """The oracle over the protocol, started through a shell that notes its process id: how
    many implementations the session started, and from which worker."""
    log = tmp_path / "started.log"
    return f"sh -c 'echo $$ >> {log}; exec {PYTHON} -m dsh_conformance.oracle serve'"


def _pytest(tmp_path: Path, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    return subprocess.run([PYTHON, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *argv],
                          capture_output=True, text=True, cwd=tmp_path, timeout=timeout, env=env)


def _passed(out: str) -> list[str]:
    return re.findall(r"^PASSED \S*::(\S+)", out, re.M)


def test_xdist_deals_cases_and_seeds_to_workers_each_with_its_own_iut(tmp_path):
    p = _pytest(tmp_path, "--dsh-impl", _impl(tmp_path), "-n", "2", "--dsh-examples", "3", "--dsh-seeds", "4-7",
                "-k", "guard-denies or guard-throw or pre-deny or entry-args-snapshot or generated")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    passed = _passed(p.stdout)
    assert sorted(t for t in passed if t.startswith("test_generated")) == [
        f"test_generated_scenarios[seed-{s}]" for s in (4, 5, 6, 7)]
    assert any(t.startswith("test_case[guard-denies") for t in passed)
    started = (tmp_path / "started.log").read_text().split()
    assert len(started) == 2 and len(set(started)) == 2  # one implementation per worker, none in the controller


def test_a_bad_seed_range_is_a_usage_error(tmp_path):
    p = _pytest(tmp_path, "--dsh-impl", "oracle", "--dsh-seeds", "7-4")
    assert p.returncode == 4 and "--dsh-seeds" in p.stderr and "Traceback" not in p.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_remote_workers_recipe_on_loopback(tmp_path):
    """The README's recipe: a socket gateway on "another host" (execnet's socketserver, in a
    directory of its own) and a second interpreter, each a worker with its own IUT."""
    host = tmp_path / "host"
    host.mkdir()
    port = _free_port()
    server = subprocess.Popen([PYTHON, "-m", "execnet.script.socketserver", f"127.0.0.1:{port}"], cwd=host,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, server, 30, pause=0.2)
        p = _pytest(tmp_path, "--dsh-impl", _impl(tmp_path), "-d", "--tx", f"socket=127.0.0.1:{port}",
                    "--tx", f"popen//python={PYTHON}", "--dsh-examples", "2", "--dsh-seeds", "1-4",
                    "-k", "guard-denies or pre-deny or generated")
    finally:
        server.terminate()
        server.wait(10)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert len([t for t in _passed(p.stdout) if t.startswith("test_generated")]) == 4
    started = (tmp_path / "started.log").read_text().split()
    assert len(set(started)) == 2
