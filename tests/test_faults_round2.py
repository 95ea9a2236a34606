"""A second attack round, past the cases the issue listed: hostile file names, a name at the
filesystem's length limit, encodings whose bytes do not survive a round trip, files owned by
someone else, warnings leaking from a parser, temporary directories a killed verify left, and a
launcher with thousands of settings. Each test failed before its fix.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate import commit as commit_module
from bf16_migrate.carriers.link_decide import _merged_spans
from bf16_migrate.output import printable
from bf16_migrate.project import migrate_paths
from bf16_migrate.verify.scratch import remove_stale

ROOT = Path(__file__).resolve().parent.parent
LEGACY = (ROOT / "fixtures" / "mlp_regression" / "train.py").read_text()
assert 'os.environ["XLA_USE_BF16"] = "1"' in LEGACY


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bf16_migrate.cli", *args], cwd=cwd, capture_output=True, text=True)


# -- names -------------------------------------------------------------------------------------------------------------
def test_a_file_whose_name_is_near_the_length_limit_is_migrated(tmp_path):
    """Its temporary, `.NAME.PID.RANDOM.bf16-migrate`, was longer than NAME_MAX: ENAMETOOLONG,
    and, the run being one change, no other file was written either."""
    long = tmp_path / ("a" * 240 + ".py")
    long.write_text(LEGACY)
    (tmp_path / "short.py").write_text(LEGACY)
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert outcome.errors == [] and len(outcome.changed) == 2
    assert "model.to(torch.bfloat16)" in long.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([long.name, "short.py"])


@pytest.mark.parametrize(
    "name, shown",
    [
        (b"new\nline.py", "new\\nline.py"),  # would start a forged line of output
        (b"\x1b[31mred\x1b[0m.py", "\\x1b[31mred\\x1b[0m.py"),  # would recolour the terminal
        ("rev\u202eyp.py".encode(), "rev\\u202eyp.py"),  # Trojan Source: shown reversed
        (b"bad\xff.py", "bad\\udcff.py"),  # not UTF-8
    ],
)
def test_a_hostile_file_name_is_shown_escaped_never_acted_on(tmp_path, name, shown):
    os.makedirs(tmp_path / "t", exist_ok=True)
    with open(os.path.join(os.fsencode(tmp_path / "t"), name), "wb") as f:
        f.write(LEGACY.encode())
    result = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", ".", "--check"], cwd=tmp_path / "t", capture_output=True
    )
    assert result.returncode == 1
    out = result.stdout.decode("utf-8", "replace")
    lines = out.splitlines()
    assert lines and all(line.startswith(shown + ":") for line in lines), out
    assert b"\x1b" not in result.stdout + result.stderr and "\u202e" not in out
    assert f"  {shown}" in result.stderr.decode("utf-8", "replace").splitlines()  # the to-do list


def test_printable_escapes_only_what_a_terminal_acts_on():
    assert printable("src/train ü é.py") == "src/train ü é.py"
    assert printable("a\tb\x7f\x85\u2066") == "a\\tb\\x7f\\x85\\u2066"


# -- encodings ---------------------------------------------------------------------------------------------------------
def test_a_file_whose_bytes_do_not_survive_its_codec_is_refused_with_the_reason(tmp_path):
    """cp932 decodes 0x8790 and 0x81E0 both to U+2252; writing the text back would have turned
    the first into the second on a line the migration never touched."""
    data = ("# -*- coding: cp932 -*-\n" + LEGACY).encode("cp932") + b"# \x87\x90\n"
    (tmp_path / "train.py").write_bytes(data)
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert (tmp_path / "train.py").read_bytes() == data
    line = data.count(b"\n")
    assert outcome.errors == [
        f"{tmp_path / 'train.py'}:{line}: not written: its bytes do not survive a round trip through cp932 (two byte "
        "sequences there decode to the same character), so writing it would change lines bf16-migrate did not "
        "touch; edit it by hand or convert it to UTF-8"
    ]


# -- owners ------------------------------------------------------------------------------------------------------------
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_file_owned_by_someone_else_keeps_its_owner(tmp_path):
    """Run as root (a CI container on a mounted checkout), the rename gave the file to root."""
    script = tmp_path / "train.py"
    script.write_text(LEGACY)
    os.chown(script, 1234, 2345)
    script.chmod(0o664)
    outcome = migrate_paths([script], "stochastic", write=True)
    assert outcome.changed == [script]
    info = script.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (1234, 2345, 0o664)


def test_a_file_owned_by_someone_else_is_written_in_place_when_not_root(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text(LEGACY)
    monkeypatch.setattr(os, "geteuid", lambda: script.stat().st_uid + 1)
    write = commit_module.plan_write(script, "x = 1\n", "utf-8", [tmp_path], 0)
    assert write.in_place and write.owner is not None


# -- a parser's warnings -----------------------------------------------------------------------------------------------
def test_an_anchor_defined_twice_is_valid_yaml_and_no_warning_is_printed(tmp_path):
    (tmp_path / "job.yaml").write_text('a: &x 1\nb: &x 2\nenv:\n  XLA_USE_BF16: "1"\n')
    result = cli("job.yaml", "--check", cwd=tmp_path)
    assert result.returncode == 1
    assert "Warning" not in result.stderr and "ruamel" not in result.stderr
    assert result.stdout.startswith("job.yaml:4:3: BFM110 ")


# -- what a killed verify leaves ---------------------------------------------------------------------------------------
def test_the_temporary_directories_of_a_killed_verify_are_removed_by_the_next(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"bf16-migrate-verify-{dead.pid}-abc123"
    live = tmp_path / f"bf16-migrate-verify-{os.getppid()}-def456"
    other_kind = tmp_path / f"bf16-migrate-against-{dead.pid}-ghi789"
    for d in (stale, live, other_kind):
        (d / "logs").mkdir(parents=True)
    link = tmp_path / f"bf16-migrate-verify-{dead.pid}-link00"
    link.symlink_to(live)
    assert remove_stale("verify", str(tmp_path)) == [str(stale)]
    assert not stale.exists() and live.is_dir() and other_kind.is_dir() and link.is_symlink()


def test_a_verify_killed_with_sigkill_leaves_its_workspace_to_the_next_one(tmp_path):
    """The workspace is named after verify's PID, so the next verify can tell it is stale."""
    script = tmp_path / "hang.py"
    script.write_text('import os\nos.environ["XLA_USE_BF16"] = "1"\nimport time\ntime.sleep(600)\n')
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    command = [sys.executable, "-m", "bf16_migrate.cli", "verify", str(script), "--steps", "3", "--timeout", "60"]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        said: list[str] = []
        while not said or "run started" not in said[-1]:
            said.append(proc.stderr.readline())
            assert said[-1], f"verify ended before its run started: {''.join(said)}"  # EOF: no endless loop
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = [p.name for p in (tmp_path / "tmp").iterdir()]
    assert any(name.startswith(f"bf16-migrate-verify-{proc.pid}-") for name in left), left
    removed = remove_stale("verify", str(tmp_path / "tmp"))  # what the next verify's workspace does first
    assert removed and all(Path(p).name.startswith(f"bf16-migrate-verify-{proc.pid}-") for p in removed)
    assert not [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith(f"bf16-migrate-verify-{proc.pid}-")]


# -- thousands of settings ---------------------------------------------------------------------------------------------
def test_the_coverage_spans_are_merged_so_a_lookup_is_one_search():
    """The coverage check compared every mention with every span read (quadratic: 20,000
    exports took 177 s, 32 s now)."""
    assert _merged_spans([(10, 20), (0, 5), (5, 8), (15, 30), (40, 41)]) == [(0, 8), (10, 30), (40, 41)]


# -- shell that never sets what it seems to set ---------------------------------------------------------------------
TRAIN = LEGACY.replace('os.environ["XLA_USE_BF16"] = "1"\n', "")


@pytest.mark.parametrize(
    "launcher, code, why",
    [
        ("export XLA_USE_BF16=1 &\npython train.py\n", "BFM110", "reaches no Python script"),  # a background subshell
        ("while false; do export XLA_USE_BF16=1; done\npython train.py\n", "BFM092", "the body of `while false`"),
        ("until true; do export XLA_USE_BF16=1; done\npython train.py\n", "BFM092", "the body of `until true`"),
        ("if ! true; then export XLA_USE_BF16=1; fi\npython train.py\n", "BFM092", "branch of `if ! true`"),
        ("case x in y) export XLA_USE_BF16=1;; esac\npython train.py\n", "BFM092", "which `x` never matches"),
        ("export XLA_USE_BF16=1\nexit 0\npython train.py\n", "BFM110", "reaches no Python script"),
        ("export XLA_USE_BF16=1\nenv -i PATH=/usr/bin python train.py\n", "BFM110", "reaches no Python script"),
        ("export XLA_USE_BF16=1\nsudo python train.py\n", "BFM111", "sudo starts it with the environment its policy"),
    ],
)
def test_a_shell_setting_that_never_reaches_the_launch_changes_nothing(tmp_path, launcher, code, why):
    """Each of these trained train.py in fp32 (or, under sudo, as its policy decides): it was
    cast to bf16 and the setting removed."""
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "run.sh").write_text("#!/bin/bash\n" + launcher)
    outcome = migrate_paths([tmp_path], "stochastic", write=False)
    assert outcome.changed == []
    [finding] = [d for d in outcome.diagnostics if d.path.endswith("run.sh")]
    assert finding.code == code and not finding.fixed and why in finding.message


def test_sudo_e_and_env_i_with_the_setting_on_its_own_line_still_migrate(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\nsudo -E python train.py\n")
    assert sorted(p.name for p in migrate_paths([tmp_path], "stochastic", write=False).changed) == [
        "run.sh",
        "train.py",
    ]
    (tmp_path / "run.sh").write_text("#!/bin/bash\nenv -i XLA_USE_BF16=1 python train.py\n")
    assert sorted(p.name for p in migrate_paths([tmp_path], "stochastic", write=False).changed) == [
        "run.sh",
        "train.py",
    ]


@pytest.mark.parametrize(
    "name, text",
    [
        ("Dockerfile", 'FROM python:3.11\nENV XLA_USE_BF16=1\nENV XLA_USE_BF16=true\nCMD ["python", "train.py"]\n'),
        ("Dockerfile", "FROM python:3.11\nENV XLA_USE_BF16=1\nRUN XLA_USE_BF16=1 python train.py\n"),
        (
            "job.yaml",
            'spec:\n  containers:\n    - name: t\n      command: ["python", "train.py"]\n      env:\n'
            '        - name: XLA_USE_BF16\n          value: "1"\n        - name: XLA_USE_BF16\n          value: "1"\n',
        ),
    ],
)
def test_a_value_set_again_to_the_same_meaning_is_migrated_with_it(tmp_path, name, text):
    """Only a later value that changes the meaning hides the earlier one (BFM092)."""
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / name).write_text(text)
    outcome = migrate_paths([tmp_path], "stochastic", write=False)
    assert sorted(p.name for p in outcome.changed) == sorted([name, "train.py"])
    assert not [d for d in outcome.diagnostics if d.code == "BFM092"]


# -- --revert-failed after a long verify -------------------------------------------------------------------------------
def test_revert_failed_never_puts_back_over_an_edit_made_while_verify_ran(tmp_path):
    """The verify takes minutes; a file edited meanwhile was overwritten with its bytes from before
    the rewrite."""
    from bf16_migrate.verify.after_rewrite import revert_failed

    from test_rewrite_verify import _outcome

    (tmp_path / "a.py").write_text("new a\n")
    (tmp_path / "run.sh").write_text("new run\n# edited while verify ran\n")
    snapshot = {tmp_path / "a.py": b"old a\n", tmp_path / "run.sh": b"old run\n"}
    after = {tmp_path / "a.py": b"new a\n", tmp_path / "run.sh": b"new run\n"}
    done = revert_failed([_outcome("a.py", ["a.py", "run.sh"], False)], snapshot, tmp_path, [tmp_path], after=after)
    assert "it changed after bf16-migrate read it" in done.failed[tmp_path / "run.sh"] and not done.restored
    assert (tmp_path / "run.sh").read_text() == "new run\n# edited while verify ran\n"
    assert (tmp_path / "a.py").read_text() == "new a\n"
