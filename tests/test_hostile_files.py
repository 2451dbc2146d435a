"""Files others wrote, and places that cannot be written (issue 21, issue 26 item 2).

A report is input, never a pointer to files: no view reads what a crafted report names. No
output follows a planted symbolic or hard link. Output files get the umask's mode. Every
file the suite reads is refused in one line when it is no regular file (a FIFO, a device, a
directory) or too big, and a crafted report record is one line and exit 2. A read-only
place is refused before any work, a full disk is one line and exit 4, and no output
replaces an input or another output. Each test does the hostile thing for real: a planted
link, a FIFO, ``/dev/zero``, a read-only bind mount and a full tmpfs (skipped where the
machine does not allow mounts).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_conformance.cli import main
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.reporting.evidence import document_digest
from dsh_conformance.textio.outputs import EXIT_OUTPUT, OutputLock, OutputError, write_atomic
from dsh_conformance.reporting.report import CaseRecord, Footer, Outcome, ReportWriter, new_header, read_report
from dsh_conformance.reporting.case_html import builtin_case

from .conftest import FAKE, ROOT, corpus_subset

BYPASS = f"{sys.executable} {FAKE} guard-bypass"
ONE = ["guard-denies-with-number"]
SECRET = "TOP-SECRET-7f3a9c"


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """The command in-process: its exit code, stdout and stderr (no traceback, ever)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert "Traceback" not in err.getvalue() + out.getvalue()
    return code, out.getvalue(), err.getvalue()


def refused(argv: list[str], *needles: str) -> str:
    """The command exits 2 with one line on stderr, holding each of ``needles``."""
    code, _, err = run_cli(argv)
    assert code == 2, (argv, err)
    assert len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, (n, err)
    return err


def small_report(path: Path, case_id: str = "guard-denies-with-number", corpus: str = "built-in",
                 case_file: str | None = None, digest: str | None = None) -> Path:
    """A report of one failing corpus case, written as ``run`` writes it."""
    w = ReportWriter(path)
    h = new_header({"name": "crafted", "version": "1", "language": "python"}, ["core"], 0, 0)
    h.corpus = corpus
    w.write(h)
    w.write(CaseRecord(id=case_id, source="corpus", rules=["P46"], outcome=Outcome.FAIL, failing_rules=["P46"],
                       case_file=case_file or f"{case_id}.json", scenario_sha256=digest, profiles=["core"],
                       trace={"observations": [], "results": [], "events": []},
                       divergence={"where": "observations[c1][0]", "expected": 1, "actual": 2, "rules": ["P46"]}))
    w.write(Footer(counts={"fail": 1}, rules={"P46": "fail"}, exit=1, finished="2026-01-01T00:00:00Z"))
    w.close()
    return path


# ------------------------------------------------------------- 1. a report is input


@pytest.mark.parametrize("form", ["root", "directory"])
def test_views_read_nothing_a_report_names(tmp_path, form):
    """A crafted report whose ``corpus`` is ``/`` or a directory holding a secret JSON file
    under the name of a corpus case (with its digest, so that a reader that followed it would
    show it): no view shows the secret, none gives a traceback, a non-JSON file named as the
    case (``/etc/hostname``) included."""
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    doc = {"id": "guard-denies-with-number", "title": SECRET, "token": SECRET}
    (secret_dir / "guard-denies-with-number.json").write_text(json.dumps(doc))
    (secret_dir / "credentials.json").write_text(json.dumps({"id": "credentials", "key": SECRET}))
    corpus = "/" if form == "root" else str(secret_dir)
    prefix = str(secret_dir.relative_to("/")) + "/" if form == "root" else ""
    reports = [
        small_report(tmp_path / "a.jsonl", corpus=corpus, case_file=prefix + "guard-denies-with-number.json",
                     digest=document_digest(doc)),
        small_report(tmp_path / "b.jsonl", case_id="credentials", corpus=corpus, case_file=prefix + "credentials.json",
                     digest=document_digest({"id": "credentials", "key": SECRET})),
        small_report(tmp_path / "c.jsonl", case_id="hostname", corpus="/", case_file="etc/hostname"),
        small_report(tmp_path / "d.jsonl", case_id="../../../../etc/passwd", corpus="/", case_file="etc/passwd"),
    ]
    for fmt in ("html", "md", "json"):
        code, out, _ = run_cli(["report", *map(str, reports), "--format", fmt])
        assert code == 0 and SECRET not in out and "root:" not in out
    out_file = tmp_path / "page.html"
    assert run_cli(["report", *map(str, reports), "--format", "html", "-o", str(out_file)])[0] == 0
    page = out_file.read_text()
    assert SECRET not in page and "another version of this case" in page and "not in the corpus of this suite" in page
    code, out, _ = run_cli(["diff", str(reports[0]), str(reports[1])])
    assert code in (0, 1) and SECRET not in out


def test_a_corpus_case_is_found_by_id_in_the_suites_own_corpus():
    assert builtin_case("guard-denies-with-number") == json.loads((CASES / "guard-denies-with-number.json").read_text())
    for bad in ("../cases/guard-denies-with-number", "/etc/passwd", "..", "a/../../x", "", "x" * 300, "README"):
        assert builtin_case(bad) is None


# ------------------------------------------------------------- 2. no output follows a link


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim.txt"
    v.write_text("precious\n")
    return v


def unchanged(victim: Path) -> None:
    assert victim.read_text() == "precious\n"


def test_a_symlink_at_the_lock_path_is_refused_and_left(tmp_path, victim):
    cases = corpus_subset(tmp_path, ONE)
    report = tmp_path / "r.jsonl"
    lock = tmp_path / ".r.jsonl.lock"
    lock.symlink_to(victim)
    refused(["run", "--impl", "oracle-inprocess", "--cases", str(cases), "--examples", "0", "--report", str(report)],
            "is a symbolic link")
    unchanged(victim)
    assert lock.is_symlink() and not report.exists()  # neither removed nor written through


def test_a_hard_link_at_the_lock_path_is_refused(tmp_path, victim):
    lock = tmp_path / ".r.jsonl.lock"
    os.link(victim, lock)
    with pytest.raises(OutputError, match="a file of 2 links"):
        OutputLock(tmp_path / "r.jsonl", "--report").acquire()
    unchanged(victim)


def test_a_fifo_at_the_lock_path_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / ".r.jsonl.lock")
    with pytest.raises(OutputError, match="not a regular file"):
        OutputLock(tmp_path / "r.jsonl", "--report").acquire()


def test_outputs_replace_a_planted_link_never_write_through_it(tmp_path, victim):
    """--report, --junit, report -o, diff -o, expectations update --output and badge -o:
    a symbolic link at the output path is replaced by the file; its target is untouched."""
    cases = corpus_subset(tmp_path, ONE)
    links = {name: tmp_path / name for name in ("r.jsonl", "j.xml", "page.md", "d.txt")}
    for link in links.values():
        link.symlink_to(victim)
    second = tmp_path / "second-victim.txt"  # two links to one file are one output: refused as such
    second.write_text("precious\n")
    links["j.xml"].unlink()
    links["j.xml"].symlink_to(second)
    code, _, err = run_cli(["run", "--impl", BYPASS, "--cases", str(cases), "--examples", "0",
                            "--report", str(links["r.jsonl"]), "--junit", str(links["j.xml"])])
    assert code == 1, err
    report = str(links["r.jsonl"])
    assert run_cli(["report", report, "-o", str(links["page.md"])])[0] == 0
    assert run_cli(["diff", report, report, "-o", str(links["d.txt"])])[0] == 0
    # expectations update reads the file it rewrites (to keep its reasons): a link there to
    # an expectations file is read, and replaced, the file it points to left as it was
    shared_exp = tmp_path / "shared.yaml"
    shared_exp.write_text("implementation: shared\n")
    links["e.yaml"] = tmp_path / "e.yaml"
    links["e.yaml"].symlink_to(shared_exp)
    assert run_cli(["expectations", "update", "--report", report, "--output", str(links["e.yaml"])])[0] == 0
    assert shared_exp.read_text() == "implementation: shared\n"
    badges = tmp_path / "badges"
    badges.mkdir()
    (badges / "crafted-1.svg").symlink_to(victim)
    assert run_cli(["badge", str(small_report(tmp_path / "s.jsonl")), "-o", str(badges)])[0] == 0
    site = tmp_path / "site"
    (site / "rule").mkdir(parents=True)
    (site / "rule" / "P46.html").symlink_to(victim)
    assert run_cli(["site", str(tmp_path / "s.jsonl"), "-o", str(site)])[0] == 0
    links["P46.html"] = site / "rule" / "P46.html"
    unchanged(victim)
    unchanged(second)
    for link in [*links.values(), badges / "crafted-1.svg"]:
        assert not link.is_symlink() and link.is_file() and link.stat().st_size > 0
    assert read_report(report).footer is not None


# ------------------------------------------------------------- 3. modes follow the umask


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_outputs_are_created_under_the_umask(tmp_path, mask, mode):
    cases = corpus_subset(tmp_path, ONE)
    old = os.umask(mask)
    try:
        report, junit = tmp_path / "r.jsonl", tmp_path / "j.xml"
        assert run_cli(["run", "--impl", BYPASS, "--cases", str(cases), "--examples", "0", "--report", str(report),
                        "--junit", str(junit), "--failures", str(tmp_path / "f")])[0] == 1
        assert run_cli(["report", str(report), "-o", str(tmp_path / "m.md")])[0] == 0
        assert run_cli(["expectations", "update", "--report", str(report), "--output", str(tmp_path / "e.yaml")])[0] == 0
        assert run_cli(["badge", str(report), "-o", str(tmp_path / "b")])[0] == 0
        write_atomic(tmp_path / "w.txt", "x")
    finally:
        os.umask(old)
    made = [report, junit, tmp_path / "m.md", tmp_path / "e.yaml", tmp_path / "w.txt", *(tmp_path / "b").iterdir()]
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in made} == {p.name: mode for p in made}


def test_a_replaced_file_keeps_its_mode(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("old")
    p.chmod(0o640)
    write_atomic(p, "new")
    assert p.read_text() == "new" and stat.S_IMODE(p.stat().st_mode) == 0o640


# ------------------------------------------------------------- 6. special files and records


def fifo(tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    os.mkfifo(p)
    return p


def test_a_fifo_does_not_hang_replay(tmp_path):
    """In a process of its own, bounded: a FIFO nobody writes is refused at once."""
    f = fifo(tmp_path, "case.json")
    proc = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "replay", str(f)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "not a regular file (a pipe)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "/dev/null", "DIR", "FIFO"])
def test_every_reader_refuses_special_files(tmp_path, special):
    if special == "DIR":
        path = str(tmp_path / "dir.json")
        os.mkdir(path)
    elif special == "FIFO":
        path = str(fifo(tmp_path, "pipe.json"))
    else:
        path = special
    good = str(small_report(tmp_path / "good.jsonl"))
    refused(["replay", path], "not a regular file")
    refused(["report", path], "not a regular file")
    refused(["report", good, path, "--format", "html"], "not a regular file")
    refused(["diff", good, path], "not a regular file")
    refused(["diff", path, good], "not a regular file")
    refused(["badge", path, "-o", str(tmp_path / "b")], "not a regular file")
    refused(["site", good, path, "-o", str(tmp_path / "s")], "not a regular file")
    refused(["expectations", "update", "--report", path, "--output", str(tmp_path / "e.yaml")], "not a regular file")
    refused(["run", "--impl", "oracle-inprocess", "--examples", "0", "--expectations", path], "not a regular file")
    refused(["merge", path, "-o", str(tmp_path / "m.jsonl")], "not a regular file")
    refused(["merge", good, path, "-o", str(tmp_path / "m.jsonl")], "not a regular file")


def test_special_files_in_a_cases_directory_are_refused(tmp_path):
    cases = corpus_subset(tmp_path, ONE)
    fifo(cases, "a-pipe.json")
    refused(["run", "--impl", "oracle-inprocess", "--cases", str(cases), "--examples", "0"], "a-pipe.json",
            "not a regular file")
    os.unlink(cases / "a-pipe.json")
    os.mkdir(cases / "a-dir.json")
    refused(["run", "--impl", "oracle-inprocess", "--cases", str(cases), "--examples", "0"], "a-dir.json",
            "not a regular file")


def test_a_report_over_the_limit_is_refused_unread(tmp_path, monkeypatch):
    from dsh_conformance.reporting import report as report_module

    good = small_report(tmp_path / "good.jsonl")
    monkeypatch.setattr(report_module, "MAX_REPORT_BYTES", 100)
    refused(["report", str(good)], "the limit is 100")


def crafted_lines(tmp_path: Path) -> dict[str, bytes]:
    good = small_report(tmp_path / "base.jsonl").read_bytes().split(b"\n")
    header, case, footer = good[0], good[1], good[2]

    def with_case(**changes: object) -> bytes:
        doc = json.loads(case)
        doc.update(changes)
        return b"\n".join([header, json.dumps(doc).encode(), footer]) + b"\n"

    def with_header(**changes: object) -> bytes:
        doc = json.loads(header)
        doc.update(changes)
        return b"\n".join([json.dumps(doc).encode(), case, footer]) + b"\n"

    return {
        "wrong type": with_case(rules="P46"),
        "wrong outcome": with_case(outcome="great"),
        "missing id": with_case(id=None),
        "huge duration": with_case(duration_ms=10 ** 400),
        "huge float": with_header(seed=1e400),
        "list kind": b'{"kind":["header"]}\n',
        "dict kind": b'{"kind":{"a":1}}\n',
        "not an object": b"[1,2,3]\n",
        "non-utf8": header + b"\n" + case[:-2] + b'\xff"}\n',
        "deep": header + b"\n" + b'{"kind":"case","x":' + b"[" * 5000 + b"]" * 5000 + b"}\n",
        "wrong format": with_header(format="dsh-conformance/report/v99"),
        "huge format": with_header(format="v" * 100000),
        "case first": case + b"\n" + header + b"\n",
        "empty": b"",
        "binary": bytes(range(256)) * 4,
        "extra field": with_case(evil=True),
        "bad rule id": with_case(failing_rules=["X"]),
        "build not an object": with_header(implementation={"name": "x", "build": "main"}),
        "build package not an object": with_header(implementation={"name": "x", "build": {"packages": {"a": "1"}}}),
        "build changed not strings": with_header(implementation={"name": "x", "build": {"commit": "c", "changed": [1]}}),
        "divergence without place": with_case(divergence={"expected": 1}),
        "violation without rule": with_case(violations=[{"message": "m"}]),
        "NaN": header + b"\n" + case[:-1] + b',"x":NaN}\n',
    }


def test_crafted_report_records_are_one_line_and_exit_2(tmp_path):
    """Never a traceback and never exit 1 (which ``diff`` uses for a regression)."""
    good = str(small_report(tmp_path / "good.jsonl"))
    for name, data in crafted_lines(tmp_path).items():
        p = tmp_path / f"crafted-{name.replace(' ', '-')}.jsonl"
        p.write_bytes(data)
        for argv in (["report", str(p)], ["report", str(p), "--format", "html"], ["diff", good, str(p)],
                     ["diff", str(p), good], ["badge", str(p), "-o", str(tmp_path / "b")],
                     ["site", good, str(p), "-o", str(tmp_path / "s")],
                     ["expectations", "update", "--report", str(p), "--output", str(tmp_path / "e.yaml")]):
            code, _, err = run_cli(argv)
            assert code == 2 and len(err.strip().splitlines()) == 1 and str(p) in err, (name, argv, err)


# ------------------------------------------------------------- 7. places that cannot be written


@pytest.fixture
def mounts(tmp_path: Path):
    """Mount points made by the test, unmounted after it (skipped where mounts are not allowed)."""
    made: list[Path] = []

    def mount(args: list[str], where: Path) -> Path:
        where.mkdir(exist_ok=True)
        proc = subprocess.run(["mount", *args, str(where)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount here ({proc.stderr.strip() or proc.returncode})")
        made.append(where)
        return where

    yield mount
    for where in reversed(made):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def read_only(tmp_path: Path, mounts) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "existing.jsonl").write_bytes(small_report(tmp_path / "seed.jsonl").read_bytes())
    return mounts(["--bind", "-o", "ro", str(src)], tmp_path / "ro")


def test_a_read_only_place_is_refused_before_any_work(tmp_path, read_only):
    """Root passes every mode-bit check: the check creates a file to know (exit 2, one line,
    nothing started: the IUT named would fail to start, and it is never asked)."""
    cases = corpus_subset(tmp_path, ONE)
    never = "/nonexistent/never-started"
    base = ["run", "--impl", never, "--cases", str(cases), "--examples", "0"]
    refused([*base, "--report", str(read_only / "r.jsonl")], "--report", "not writable")
    refused([*base, "--junit", str(read_only / "j.xml")], "--junit", "not writable")
    refused([*base, "--failures", str(read_only / "f")], "--failures", "not writable")
    good = str(small_report(tmp_path / "good.jsonl"))
    refused(["report", good, "-o", str(read_only / "m.md")], "--output", "not writable")
    refused(["diff", good, good, "-o", str(read_only / "d.txt")], "--output", "not writable")
    refused(["badge", good, "-o", str(read_only)], "--output", "not writable")
    refused(["badge", good, "-o", str(read_only / "sub")], "--output", "cannot create the directory")
    refused(["site", good, "-o", str(read_only)], "--output", "not writable")
    refused(["expectations", "update", "--report", good, "--output", str(read_only / "e.yaml")], "not writable")
    assert sorted(p.name for p in read_only.iterdir()) == ["existing.jsonl"]


def test_a_full_disk_is_one_line_and_exit_4_with_a_valid_partial_report(tmp_path, mounts):
    """The report's directory fills up during the run: the run goes on to its summary, then
    says that the report is incomplete (exit 4); the report holds whole records only."""
    full = mounts(["-t", "tmpfs", "-o", "size=64k", "tmpfs"], tmp_path / "full")
    cases = corpus_subset(tmp_path, ["guard-denies-with-number", "pre-deny-skips-body", "guard-falsy-returns-deny",
                                     "finalize-content-only", "loop-contexts-after-batch"])
    (full / "filler").write_bytes(b"\0" * 40 * 1024)
    code, out, err = run_cli(["run", "--impl", BYPASS, "--cases", str(cases), "--examples", "0",
                              "--report", str(full / "r.jsonl")])
    assert code == EXIT_OUTPUT, err
    assert "cases:" in out  # the summary came
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "r.jsonl: cannot write: No space left on device" in lines[0], err
    rep = read_report(full / "r.jsonl")
    assert rep.footer is None and len(rep.cases) < 5
    assert not (full / ".r.jsonl.lock").exists()


def test_a_full_disk_under_report_o_is_exit_4_and_leaves_the_old_file(tmp_path, mounts):
    full = mounts(["-t", "tmpfs", "-o", "size=64k", "tmpfs"], tmp_path / "full")
    (full / "page.html").write_text("old page\n")
    (full / "filler").write_bytes(b"\0" * 56 * 1024)
    good = str(small_report(tmp_path / "good.jsonl"))
    code, _, err = run_cli(["report", good, "--format", "html", "-o", str(full / "page.html")])
    assert code == EXIT_OUTPUT and len(err.strip().splitlines()) == 1 and "No space left on device" in err
    assert (full / "page.html").read_text() == "old page\n"
    assert sorted(p.name for p in full.iterdir()) == ["filler", "page.html"]  # no temporary file left


def test_no_output_replaces_an_input_or_another_output(tmp_path):
    cases = corpus_subset(tmp_path, ONE)
    good = small_report(tmp_path / "good.jsonl")
    alias = tmp_path / "alias.jsonl"
    alias.symlink_to(good)
    before = good.read_bytes()
    base = ["run", "--impl", "oracle-inprocess", "--cases", str(cases), "--examples", "0"]
    refused([*base, "--report", str(good), "--junit", str(good)], "the same file as --report")
    refused([*base, "--report", str(tmp_path / "x"), "--junit", str(tmp_path / "x")], "the same file as --report")
    exp = tmp_path / "e.yaml"
    exp.write_text("implementation: x\n")
    refused([*base, "--report", str(exp), "--expectations", str(exp)], "the same file as the input")
    refused(["report", str(good), "-o", str(good)], "the same file as the input")
    refused(["report", str(good), "-o", str(alias)], "the same file as the input")
    refused(["diff", str(good), str(tmp_path / "good.jsonl"), "-o", str(good)], "the same file as the input")
    refused(["expectations", "update", "--report", str(good), "--output", str(alias)], "the same file as the input")
    refused(["merge", str(good), "-o", str(alias)], "the same file as the input")
    as_badge = tmp_path / "crafted-1.svg"  # the name of the badge of its own implementation
    as_badge.write_bytes(before)
    refused(["badge", str(as_badge), "-o", str(tmp_path)], "the same file as the input")
    assert good.read_bytes() == before and as_badge.read_bytes() == before


def test_a_saved_case_never_writes_or_reads_through_what_is_planted_at_its_path(tmp_path, victim):
    """A counterexample saved under --failures (as run_properties saves it), where a link to
    a victim and a FIFO nobody writes sit at the names it would take: neither is written
    through or replaced (another run's file is never overwritten), the FIFO is not opened
    (it would hang), and the case is saved beside them with the umask's mode."""
    from dsh_conformance.iut.in_process import embedded_oracle
    from dsh_conformance.running.runner import Runner

    failures = tmp_path / "failures"
    failures.mkdir()
    (failures / "prop-0123456789ab.json").symlink_to(victim)
    os.mkfifo(failures / "prop-0123456789ab-2.json")
    doc = {**json.loads((CASES / "guard-denies-with-number.json").read_text()), "id": "prop-0123456789ab"}
    iut = embedded_oracle()
    iut.start()
    old = os.umask(0o022)
    try:
        saved = Runner(iut, {"core"}, failures_dir=failures).save(doc["id"], doc)
    finally:
        os.umask(old)
        iut.close()
    unchanged(victim)
    assert (failures / "prop-0123456789ab.json").is_symlink()
    assert stat.S_ISFIFO(os.lstat(failures / "prop-0123456789ab-2.json").st_mode)
    path = failures / "prop-0123456789ab-3.json"
    assert saved == path.name and json.loads(path.read_text())["id"] == doc["id"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_site_refuses_a_link_planted_where_it_has_a_folder(tmp_path):
    """The site's folders (case/, rule/, ...) are never followed to where a link points."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "case").symlink_to(elsewhere)
    report = str(small_report(tmp_path / "s.jsonl"))
    refused(["site", report, "-o", str(site)], "--output", "not a directory of the site")
    assert list(elsewhere.iterdir()) == [] and list(site.iterdir()) == [site / "case"]
