"""An xdist worker's last seconds: execnet's SIGINT is no traceback.

Once every worker has reported its session finished, the controller asks each gateway to
exit (``execnet.multi.Group.terminate``). A worker whose execution has not returned within
5 s of that (its ``pytest_unconfigure`` hooks, the collector over a large heap, all slower
on a loaded machine) is sent a SIGINT by its own gateway
(``WorkerGateway._terminate_execution``), in case a test hangs. The KeyboardInterrupt
lands wherever the main thread is, most often inside hypothesis' gc callback
(``gc_cumulative_time``): Python cannot raise it there and prints it as an unraisable
exception, a ``KeyboardInterrupt`` traceback at the end of a passing run (issue 26).

The session is over by then: nothing is left to interrupt but the worker's own clean-up.
So from the end of a worker's session on, SIGINT is ignored in that worker; execnet still
ends a worker that hangs (``os._exit`` 10 s later, and the controller kills it). A user's
Ctrl-C reaches the controller as before, which stops the run."""

from __future__ import annotations

import signal
import threading

import pytest


@pytest.hookimpl(trylast=True)  # after the session's fixtures are torn down
def pytest_sessionfinish(session: pytest.Session) -> None:
    if is_worker(session.config) and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")  # set by pytest-xdist in a worker's config
