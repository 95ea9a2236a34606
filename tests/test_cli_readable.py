"""Output a person reads: the ``grouped`` format (findings under their file, repeats folded,
messages wrapped), the Markdown report, the summary's next commands with real names, the
walk's progress display, and ruff's conventions (``--extend-select``, ``per-file-ignores``,
``--show-fixes``, ``--color``/``FORCE_COLOR``/``NO_COLOR``, a mistyped command named, shell
completion)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.diagnostics import Diagnostic
from bf16_migrate.output_human import fixes_lines, fold, grouped_lines, todo_lines, wrap
from bf16_migrate.walk_progress import BAR_WIDTH, WalkProgress
from bf16_migrate.walk_progress import fit as walk_progress_fit

from conftest import FIXTURES, ROOT

SHOWCASE = (ROOT / "examples" / "showcase" / "train.py").read_text()
NOTEBOOK_BANG = '!python -c \'import os; os.environ["XLA_USE_BF16"]="1"\''
ANSI = "\x1b["


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def _cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=300,
    )


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    tree = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", tree, ignore=shutil.ignore_patterns("expected"))
    monkeypatch.chdir(tree)
    return tree


# -- grouped, folded, wrapped -------------------------------------------------------------------


def _d(path: str, line: int, col: int, code: str = "BFM091", message: str = "documentation names XLA_USE_BF16"):
    return Diagnostic(code, path, line, col, message, False)


def test_grouped_puts_findings_under_their_file_and_folds_repeats():
    found = [
        _d("nb.ipynb#cell2", 3, 1, "BFM133", "a shell command names XLA_USE_BF16"),
        _d("nb.ipynb#cell5", 1, 4, "BFM133", "a shell command names XLA_USE_BF16"),
        *(_d(f"nb.ipynb#cell{n}", 1, 1, "BFM133", "a shell command names XLA_USE_BF16") for n in range(6, 20)),
        _d("README.md", 4, 13),
        Diagnostic("BFM001", "train.py", 8, 12, "XLA_USE_BF16 replaced: model cast", True),
    ]
    lines = grouped_lines(found, lambda d: d.message, dry_run=True)
    assert lines[0] == "nb.ipynb:"
    assert lines[1] == (
        "  cell2:3:1 BFM133 x16 a shell command names XLA_USE_BF16"
        " (also at cell5:1:4, cell6:1:1, cell7:1:1 and 12 more)"
    )
    assert lines[2:] == [
        "",
        "README.md:",
        "  4:13 BFM091 documentation names XLA_USE_BF16",
        "",
        "train.py:",
        "  8:12 BFM001 [*] XLA_USE_BF16 replaced: model cast",
    ]
    # a run that wrote: what was fixed is counted by the summary, not listed
    assert "train.py:" not in grouped_lines(found, lambda d: d.message, dry_run=False)
    assert fixes_lines(found, {"BFM001": "legacy-bf16-switch"}, dry_run=False) == [
        "Fixed 1 finding(s):",
        "- train.py:",
        "    1 x BFM001 (legacy-bf16-switch)",
    ]


def test_grouped_wraps_messages_to_the_terminal_width():
    message = "a long message " * 12
    lines = grouped_lines([_d("train.py", 12, 4, message=message.strip())], lambda d: d.message, False, width=60)
    assert len(lines) > 3 and all(len(line) <= 60 for line in lines), lines
    assert all(line.startswith("      ") for line in lines[2:])  # continuation lines under the message
    assert " ".join(" ".join(line.split()) for line in lines[1:]).endswith(message.strip())
    assert wrap("x" * 80, 40, indent=4) == ["x" * 80]  # a word is never broken
    assert wrap("a b", None, indent=4) == ["a b"]  # no terminal: no wrapping


def test_to_do_items_name_every_line_of_a_folded_finding():
    found = [_d("README.md", n, 1) for n in (4, 9, 12)] + [_d("nb.ipynb#cell2", 1, 6, "BFM110", "reaches no script")]
    lines = todo_lines(found, {"BFM091": "doc", "BFM110": "reach"}, {"BFM091": "Edit it.", "BFM110": "Do it."}, None)
    assert lines == [
        "Left to do by hand (4):",
        "  README.md",
        "    [ ] lines 4, 9 and 12: doc (BFM091): Edit it.",
        "  nb.ipynb",
        "    [ ] cell 2, line 1: reach (BFM110): Do it.",
    ]
    assert len(fold(found)["README.md"]) == 1


def test_the_cli_prints_grouped_when_asked_and_text_to_a_pipe(project):
    grouped = invoke(".", "--check", "--output-format", "grouped")
    assert "run.sh:\n  6:8 BFM001 [*] would replace XLA_USE_BF16" in grouped.stdout
    assert "notebooks/quick_run.ipynb:\n  cell2:1:6 BFM001 [*] would replace" in grouped.stdout
    text = invoke(".", "--check")  # not a terminal: the one-line format
    assert "run.sh:6:8: BFM001 would replace XLA_USE_BF16" in text.stdout


# -- Markdown --------------------------------------------------------------------------------------


def test_markdown_report_renders_a_table_a_todo_list_and_the_next_commands(project):
    from markdown_it import MarkdownIt

    (project / "README.md").write_text("Set XLA_USE_BF16=1 | then run.\n")
    result = invoke(".", "--check", "--output-format", "markdown")
    assert result.exit_code == 1
    text = result.stdout
    assert text.startswith("## bf16-migrate (mode `stochastic`, dry run)\n\n**")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    files = {d["path"].split("#")[0] for d in json.loads(invoke(".", "--check", "--json").stdout)["diagnostics"]}
    assert [t.type for t in tokens].count("table_open") == len(files) > 3  # one table under each file's name
    assert "#### `run.sh`\n\n| where | code | finding | fix |" in text
    cells = [t.content for t in tokens if t.type == "inline"]
    assert any(c.startswith("would replace XLA_USE_BF16") for c in cells)
    assert "Set XLA_USE_BF16=1 | then run." not in text  # escaped in its cell
    assert "- [ ] `README.md` 1:5: **documentation-names-variable** (BFM091)" in text
    assert "### Next" in text and "- **apply:** `bf16-migrate . --mode stochastic`" in text
    assert (
        "- **prove first:** `bf16-migrate verify src/train.py --legacy-env XLA_DOWNCAST_BF16=1 -- --steps 30`" in text
    )


# -- next commands ---------------------------------------------------------------------------------


def test_the_summary_names_the_next_commands_with_real_names(project):
    result = invoke(".", "--diff", "--mode", "gpu-compatible")
    err = result.stderr
    assert "Next:\n  apply:        bf16-migrate . --mode gpu-compatible\n" in err
    # the script the launchers start, with a launcher's setting and its launch line's arguments
    assert (
        "  prove first:  bf16-migrate verify src/train.py --mode gpu-compatible --legacy-env XLA_DOWNCAST_BF16=1"
        " -- --steps 30\n" in err
    )
    assert "  apply, prove: bf16-migrate . --mode gpu-compatible --verify --revert-failed\n" in err
    assert "SCRIPT" not in err and "SCRIPT" not in result.stdout
    # the findings name the real script too
    check = invoke(".", "--check")
    assert "`bf16-migrate verify src/train.py --legacy-env XLA_USE_BF16=1` compares it" in check.stdout


def test_a_script_that_sets_the_switch_itself_and_the_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SHOWCASE)
    (tmp_path / "NOTES.md").write_text("We set XLA_USE_BF16 in train.py.\n")
    err = invoke(".", "--check").stderr
    assert "  prove first:  bf16-migrate verify train.py\n" in err
    assert "  by hand:      1 finding(s) need a hand (BFM091)" in err and "`bf16-migrate explain BFM091`" in err


def test_after_a_write_in_git_the_proof_is_verify_against_head(tmp_path):
    env = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    (tmp_path / "train.py").write_text(SHOWCASE)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env={**os.environ, **env})
    result = _cli(tmp_path, "train.py")
    assert result.returncode == 0, result.stderr
    assert "Next:\n  review: git diff\n  prove:  bf16-migrate verify --against HEAD" in result.stderr
    assert "Next:" not in _cli(tmp_path, "train.py").stderr  # nothing left to do


def test_the_showcase_ends_clean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "examples" / "showcase", tmp_path / "showcase")
    result = invoke("showcase", "--diff")
    assert result.exit_code == 1 and "0 left to do by hand" in result.stderr and "by hand:" not in result.stderr
    assert invoke("showcase").exit_code == 0
    assert invoke("showcase", "--check").exit_code == 0


# -- ruff's conventions ----------------------------------------------------------------------------


def test_extend_select_adds_to_the_selection_and_per_file_ignores(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SHOWCASE.replace('= "1"\n', '= "1"  # noqa: BFM050\n', 1))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("XLA_USE_BF16\n")

    def codes(*args: str) -> set[str]:
        return {d["code"] for d in json.loads(invoke(".", "--check", "--json", *args).stdout)["diagnostics"]}

    assert codes() == {"BFM001", "BFM091"}
    assert codes("--extend-select", "BFM900") == {"BFM001", "BFM091", "BFM900"}  # opt-in added, nothing dropped
    assert codes("--select", "BFM001", "--extend-select", "BFM900") == {"BFM001", "BFM900"}
    assert codes("--per-file-ignores", "docs/*:BFM091") == {"BFM001"}
    assert codes("--per-file-ignores", "*.md:BFM09") == {"BFM001"}
    (tmp_path / "pyproject.toml").write_text(
        '[tool.bf16-migrate]\nextend-select = ["BFM900"]\nper-file-ignores = {"docs/*" = ["BFM091"]}\n'
    )
    assert codes() == {"BFM001", "BFM900"}
    assert codes("--per-file-ignores", "train.py:BFM900") == {"BFM001", "BFM091"}  # the option replaces the key
    bad = invoke(".", "--check", "--per-file-ignores", "docs/*:XYZ1")
    assert bad.exit_code == 2 and "--per-file-ignores docs/*: XYZ1" in bad.stderr


def test_show_fixes_counts_the_fixes(project):
    shown = invoke(".", "--check", "--show-fixes").stderr
    assert "Would fix 6 finding(s):\n- Dockerfile:\n    1 x BFM001 (legacy-bf16-switch)\n" in shown
    assert "- src/train.py:\n    2 x BFM001 (legacy-bf16-switch)\n" in shown
    assert "Would fix" not in invoke(".", "--check").stderr


def test_color_follows_the_option_then_force_color_then_no_color(project):
    def colored(*args: str, env: dict[str, str] | None = None) -> bool:
        result = _cli(project, ".", "--check", *args, env=env)
        return ANSI in result.stdout

    assert not colored()  # a pipe
    assert colored("--color", "always")
    assert colored(env={"FORCE_COLOR": "1"})
    assert not colored(env={"NO_COLOR": "1"})
    assert not colored("--color", "never", env={"FORCE_COLOR": "1"})
    assert colored("--color", "always", env={"NO_COLOR": "1"})


def test_a_mistyped_command_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SHOWCASE)
    result = invoke("verfy", "train.py")
    assert result.exit_code == 2
    assert "verfy: no such file, directory or command; did you mean `bf16-migrate verify`?" in result.stderr
    (tmp_path / "verfy").mkdir()  # a directory of that name is a path, as before
    assert invoke("verfy").exit_code == 0


def test_shell_completion_completes_commands_options_and_paths(tmp_path):
    def complete(words: str, cword: int) -> list[str]:
        env = {"COMP_WORDS": words, "COMP_CWORD": str(cword), "_BF16_MIGRATE_COMPLETE": "bash_complete"}
        result = subprocess.run(
            [sys.executable, "-c", "from bf16_migrate.cli import main; main(prog_name='bf16-migrate')"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
            cwd=tmp_path,
            timeout=60,
        )
        return result.stdout.split()

    assert "plain,verify" in complete("bf16-migrate ver", 1) and "file,ver" in complete("bf16-migrate ver", 1)
    assert complete("bf16-migrate --mo", 1) == ["plain,--mode"]
    assert complete("bf16-migrate verify --mo", 2) == ["plain,--mode"]
    assert complete("bf16-migrate --output-format g", 2) == ["plain,grouped", "plain,github"]
    script = subprocess.run(
        [sys.executable, "-c", "from bf16_migrate.cli import main; main(prog_name='bf16-migrate')"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "_BF16_MIGRATE_COMPLETE": "bash_source"},
        timeout=60,
    )
    assert "complete -o nosort -F _bf16_migrate_completion bf16-migrate" in script.stdout


# -- the walk's progress display -------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_walk_progress_shows_on_a_terminal_after_the_delay_without_a_thread(monkeypatch):
    import bf16_migrate.walk_progress as walk_progress

    threads = threading.active_count()
    screen = _Terminal()
    monkeypatch.setattr(walk_progress, "DELAY_S", 0.0)
    with WalkProgress(screen) as progress:
        progress.phase("reading files", 3)
        progress.advance()
        assert threading.active_count() == threads  # no refresh thread: the workers may still fork
    assert "bf16-migrate: reading files" in screen.getvalue()
    assert "1/3" in screen.getvalue()
    # not a terminal, or a short walk: nothing at all
    pipe = io.StringIO()
    with WalkProgress(pipe) as progress:
        progress.phase("x", 1)
    monkeypatch.setattr(walk_progress, "DELAY_S", 60.0)
    quick = _Terminal()
    with WalkProgress(quick) as progress:
        progress.phase("x", 1)
    assert pipe.getvalue() == "" and quick.getvalue() == ""


def _last_line(screen: io.StringIO) -> str:
    """The last line a progress display drew (its cursor and erase codes removed)."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    return [line for line in re.split(r"[\r\n]", text) if line.strip()][-1]


@pytest.mark.parametrize("columns", [80, 60, 40])
def test_walk_progress_keeps_its_count_whole_in_narrow_terminals(monkeypatch, columns):
    """At 80 columns (and fewer) the count and the time stay whole: the bar narrows first, then
    the phase's words are cut with an ellipsis; the line leaves the last column free."""
    import bf16_migrate.walk_progress as walk_progress

    monkeypatch.setattr(walk_progress, "DELAY_S", 0.0)
    monkeypatch.setenv("COLUMNS", str(columns))
    screen = _Terminal()
    with WalkProgress(screen, color=False) as progress:
        progress.phase("migrating imported modules", 30494)
        progress.advance(12494)
        line = _last_line(screen)
    assert line.startswith("bf16-migrate: ") and line.endswith(" 12494/30494 0 s"), line
    assert len(line) < columns, line
    assert ("migrating imported modules" in line) == (columns >= 60), line


def test_walk_progress_fit_gives_the_bar_way_before_the_words():
    text, bar = walk_progress_fit("reading files", 90, "494/494", "3 s")
    assert text == "reading files" and bar == BAR_WIDTH
    text, bar = walk_progress_fit("reading files", 50, "12494/30494", "397 s")
    assert text == "reading files" and bar == 50 - 1 - len("bf16-migrate: reading files") - 11 - 5 - 3
    text, bar = walk_progress_fit("reading files", 40, "12494/30494", "397 s")
    assert text == "read…" and bar == 1  # 40 - 1 - 14 - 11 - 5 - 3 = 6 columns: a bar of one, five for the words


class _Recorder:
    """A progress display that records the phases of a walk: ``[text, done, total]`` each."""

    def __init__(self) -> None:
        self.phases: list[list] = []

    def phase(self, text: str, total: int | None = None) -> None:
        self.phases.append([text, 0, total])

    def advance(self, steps: int = 1) -> None:
        self.phases[-1][1] += steps

    def set_total(self, total: int) -> None:
        self.phases[-1][2] = total


def test_every_phase_of_the_walk_has_a_total_it_reaches(tmp_path):
    """The migration phases count files: two scripts that set the switch and a launched script
    that names no variable (the total grows from 2 to 3 when the plan finds it; its trial and its
    result count once), then the one module they import (its total told before the first)."""
    from bf16_migrate.project import migrate_paths

    train = (FIXTURES / "mlp_regression" / "train.py").read_text()
    module = "import torch\n\n\ndef bias(x):\n    return torch.ones(2, device=x.device) + x\n"
    (tmp_path / "model_utils.py").write_text(module)
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("import model_utils\n" + train)
    (tmp_path / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython launched.py\n")
    (tmp_path / "launched.py").write_text(train.replace('os.environ["XLA_USE_BF16"] = "1"\n', ""))
    recorder = _Recorder()
    migrate_paths([tmp_path], "stochastic", write=False, progress=recorder)
    assert [p[0] for p in recorder.phases] == ["reading files", "migrating scripts", "migrating imported modules"]
    for _text, done, total in recorder.phases:
        assert total is not None and done == total, recorder.phases
    assert recorder.phases[1][2] == 3 and recorder.phases[2][2] == 1, recorder.phases
