"""The byte prefilter read in two processes (bf16_migrate.prefilter, bf16_migrate.prefilter_fork):
the same answer as one process, whatever the place and number of the files found, a child that
dies, an ``on_found`` that raises; and the reused read buffer never answers with a previous
file's bytes."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest

from bf16_migrate import prefilter, prefilter_fork, workers
from bf16_migrate.prefilter import mentioning, mentions_legacy

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="reading in two processes needs os.fork")


def _no_child_left() -> bool:
    """Whether this process has no child left, running or unreaped."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture
def forced(monkeypatch):
    """mentioning() forks from 10 files on, whatever the machine; the calls of read_forked are counted."""
    monkeypatch.setattr(prefilter, "PARALLEL_FROM", 10)
    monkeypatch.setattr(workers, "fork_workers", lambda: 2)
    calls = []
    real = prefilter_fork.read_forked

    def counted(*args, **kwargs):
        calls.append(kwargs.get("at_once"))
        return real(*args, **kwargs)

    monkeypatch.setattr(prefilter_fork, "read_forked", counted)
    if threading.active_count() != 1:
        pytest.skip("another thread runs in this process: mentioning() reads in one process then")
    return calls


@needs_fork
@pytest.mark.parametrize("where", ["none", "first", "last", "middle", "scattered", "all"])
def test_two_processes_find_what_one_finds(tmp_path, forced, where):
    count = 600
    rng = random.Random(where)
    wanted = {"none": set(), "first": {0}, "last": {count - 1}, "middle": {count // 2}, "all": set(range(count))}.get(
        where
    ) or set(rng.sample(range(count), 25))
    names = []
    for i in range(count):
        path = tmp_path / f"f{i:04d}.sh"
        path.write_text(f"# file {i}\n" + ("export XLA_USE_BF16=1\n" if i in wanted else "export XLA_USE=1\n"))
        names.append(str(path))
    found_calls = []
    assert mentioning(names, lambda: found_calls.append(os.getpid())) == [names[i] for i in sorted(wanted)]
    assert [name for name in names if mentions_legacy(name)] == [names[i] for i in sorted(wanted)]
    assert forced == [False]
    assert found_calls == ([os.getpid()] if wanted else [])  # once, in this process; never for none
    assert _no_child_left()


def _wait_for(started) -> None:
    """Until the child has touched ``started`` (at most 30 s: a test must not hang)."""
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.001)


@needs_fork
def test_both_processes_read_and_share_the_list(tmp_path):
    """The child reads a prefix of the list, this process the rest. So that the test does not
    depend on when the child is scheduled, this process's first read waits until the child has
    read one file."""
    parent = os.getpid()
    started = tmp_path / "child-started"
    names = [str(i) for i in range(5000)]

    def test(name: str) -> bool:
        if os.getpid() != parent:
            started.touch()
            return True  # True where the child read it: its answers come back through the pipe
        _wait_for(started)
        return False

    indices = [int(name) for name in prefilter_fork.read_forked(names, test, None)]
    assert indices and indices == list(range(len(indices))), "the child reads a prefix"
    assert len(indices) < len(names), "this process read the end of the list"
    assert _no_child_left()


@needs_fork
def test_more_hits_than_a_pipe_holds(tmp_path):
    """40,000 hits, the child's share more than a pipe's buffer holds (64 KiB, 8,192 indices):
    it waits for this process to drain the pipe; no deadlock, none lost."""
    parent = os.getpid()
    started = tmp_path / "child-started"

    def test(name: str) -> bool:
        if os.getpid() != parent:
            started.touch()
        else:  # the child has read its first file before this process reads on
            _wait_for(started)
        return True

    names = [str(i) for i in range(40000)]
    assert prefilter_fork.read_forked(names, test, None) == names
    assert _no_child_left()


@needs_fork
def test_a_child_that_dies_is_read_again_here(tmp_path):
    parent = os.getpid()
    started = tmp_path / "child-started"

    def test(name: str) -> bool:
        if os.getpid() != parent:
            started.touch()
            if int(name) == 7:
                os._exit(3)  # the child dies in the middle of its share
        else:  # this process waits until the child has claimed its first files
            _wait_for(started)
        return int(name) % 100 == 7

    names = [str(i) for i in range(3000)]
    assert prefilter_fork.read_forked(names, test, None) == [n for n in names if int(n) % 100 == 7]
    assert _no_child_left()


@needs_fork
def test_an_on_found_that_raises_stops_and_reaps_the_child():
    names = [str(i) for i in range(20000)]

    def boom() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prefilter_fork.read_forked(names, lambda name: name == "19999", boom)
    assert _no_child_left()


@needs_fork
def test_a_very_long_list_prepares_at_once(tmp_path, forced, monkeypatch):
    """From PREPARE_FROM files on, on_found runs before anything is found (the import overlaps
    the reading), even when nothing is."""
    monkeypatch.setattr(prefilter, "PREPARE_FROM", 50)
    names = []
    for i in range(60):
        path = tmp_path / f"f{i}.py"
        path.write_text("import os\n")
        names.append(str(path))
    calls = []
    assert mentioning(names, lambda: calls.append(1)) == []
    assert calls == [1] and forced == [True]


def test_the_reused_buffer_never_answers_for_a_previous_file(tmp_path):
    """A large file fills the buffer with a name; smaller files read after it must not see it."""
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 5000 + b"XLA_USE_BF16=1\n" + b"y" * ((1 << 20) + 300))
    small = tmp_path / "small.txt"
    small.write_bytes(b"nothing here\n")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\0" * 10)
    for _ in range(2):
        assert mentions_legacy(big)
        assert not mentions_legacy(small)
        assert not mentions_legacy(empty)
        assert not mentions_legacy(binary)


@pytest.mark.parametrize("size", [(1 << 20) - 1, 1 << 20, (1 << 20) + 1, (2 << 20) + 7])
def test_a_name_across_every_chunk_boundary(tmp_path, size):
    """A name that starts a few bytes before the end of a 1 MiB chunk (and the overlap kept
    between chunks) is found; the same bytes with a near-miss name are not."""
    path = tmp_path / "data.txt"
    for cut in range(1, len(b"XLA_DOWNCAST_FP16")):
        path.write_bytes(b"a" * (size - cut) + b"XLA_DOWNCAST_FP16" + b"b" * 10)
        assert mentions_legacy(path), (size, cut)
    path.write_bytes(b"a" * (size - 5) + b"XLA_DOWNCAST_FP32" + b"b" * 10)
    assert not mentions_legacy(path)


def test_a_file_that_cannot_be_read_is_kept_for_its_reader(tmp_path):
    """True (the reader then reports it with its reason), never a silent skip."""
    assert mentions_legacy(tmp_path / "missing.sh")
    if os.geteuid() != 0:
        locked = tmp_path / "locked.sh"
        locked.write_text("echo\n")
        locked.chmod(0)
        assert mentions_legacy(locked)


@needs_fork
@pytest.mark.parametrize("at_once", [False, True])
def test_the_command_line_reports_the_same_read_in_two_processes(tmp_path, forced, monkeypatch, at_once):
    """A project (launcher, Dockerfile, job spec, notebook, script) among 40 clean files: the
    same JSON report whether the files are read in one process or two."""
    import json
    import shutil
    from pathlib import Path

    from click.testing import CliRunner

    from bf16_migrate.cli import main

    tree = tmp_path / "tree"
    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures" / "project", tree)
    for i in range(40):
        (tree / f"clean_{i:02d}.py").write_text(f"print({i})\n")
    monkeypatch.chdir(tree)

    def report() -> dict:
        result = CliRunner().invoke(main, [".", "--check", "--output-format", "json"])
        assert result.exit_code == 1, result.output
        return json.loads(result.stdout)

    monkeypatch.setattr(prefilter, "PREPARE_FROM", 10 if at_once else 10**9)
    forked = report()
    assert forced == [at_once]
    monkeypatch.setattr(prefilter, "PARALLEL_FROM", 10**9)
    assert report() == forked
    assert forced == [at_once], "the second run read in one process"
    assert len(forked["diagnostics"]) > 3


def test_the_read_without_readv_gives_the_same_answers(tmp_path, monkeypatch):
    """Windows has no os.readv: the fallback (a read and a copy) answers the same."""
    monkeypatch.setattr(prefilter, "_readinto", prefilter._read_into)
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * ((1 << 20) - 3) + b"XLA_USE_BF16" + b"b" * 100)
    small = tmp_path / "small.txt"
    small.write_bytes(b"XLA_USE=1\n")
    assert mentions_legacy(big) and not mentions_legacy(small)


@needs_fork
def test_no_process_to_spare_reads_everything_here(tmp_path, monkeypatch):
    """os.fork fails (EAGAIN: a process limit): the whole list is read in this process."""

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(prefilter_fork.os, "fork", no_fork)
    names = [str(i) for i in range(3000)]
    calls = []
    assert prefilter_fork.read_forked(names, lambda name: name.endswith("7"), lambda: calls.append(1)) == [
        n for n in names if n.endswith("7")
    ]
    assert calls == [1] and _no_child_left()
