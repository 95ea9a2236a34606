"""A notebook cell's finding points at the line of the ``.ipynb`` file itself in the text,
SARIF and GitHub outputs (the JSON line where that cell's source line is), whatever the JSON
layout: nbformat's ``indent=1``, one line, other indentations, ``source`` as a list of lines or
one string, ``\\u`` escapes. The cell, line and column within the cell stay in the message."""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest
from click.testing import CliRunner

from bf16_migrate.carriers.notebook import SourceLocator
from bf16_migrate.cli import main
from bf16_migrate.diagnostics import Diagnostic
from bf16_migrate.output import format_text, location
from bf16_migrate.suppress import Selection, filter_findings

CELLS = [
    ("markdown", "# Quick run\nSets XLA_USE_BF16 in the next cell."),
    ("code", "import os\n%env XLA_USE_BF16=1\nprint('é → ok')"),
    ("code", ""),
    ("code", "x = 1\n\n    y = 'tab\\there'  # XLA_USE_BF16\n"),
]


def _notebook(source_as_list: bool) -> dict:
    nb = nbformat.v4.new_notebook()
    for kind, source in CELLS:
        cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
        nb.cells.append(cell)
    data = json.loads(nbformat.writes(nb))
    for cell in data["cells"]:
        if not source_as_list:
            cell["source"] = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        elif isinstance(cell["source"], str):
            cell["source"] = cell["source"].splitlines(keepends=True)
    return data


def _layouts():
    """(name, text) of one notebook written in several JSON layouts."""
    for as_list in (True, False):
        data = _notebook(as_list)
        form = "list" if as_list else "string"
        yield (
            f"nbformat-{form}",
            nbformat.writes(nbformat.from_dict(data)) if as_list else json.dumps(data, indent=1, ensure_ascii=False),
        )
        yield f"compact-{form}", json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        yield f"indent4-ascii-{form}", json.dumps(data, indent=4, ensure_ascii=True)
        yield f"spaced-ascii-{form}", json.dumps(data, indent="\t", separators=(" , ", " : "))


LAYOUTS = dict(_layouts())


def _char_at(text: str, line: int, col: int) -> str:
    return text.split("\n")[line - 1][col - 1 :]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_character_of_every_cell_is_located(layout):
    """Each character of each cell (1-based line and column, as findings give them) is found at
    its JSON encoding in the notebook's text."""
    text = LAYOUTS[layout]
    locator = SourceLocator(text)
    for number, (_kind, source) in enumerate(CELLS, start=1):
        for line_no, line in enumerate(source.split("\n"), start=1):
            for col, char in enumerate(line, start=1):
                position = locator.position(number, line_no, col)
                assert position is not None, (layout, number, line_no, col)
                at = _char_at(text, *position)
                encoded = json.dumps(char, ensure_ascii="ascii" in layout)[1:-1]
                assert at.startswith(encoded), (layout, number, line_no, col, at[:12])


def _at(locator: SourceLocator, cell: int, line: int, col: int) -> tuple[int, int]:
    """:meth:`SourceLocator.position`, which the test expects to be found."""
    found = locator.position(cell, line, col)
    assert found is not None, (cell, line, col)
    return found


def test_the_line_in_nbformat_indent_1_and_in_one_line():
    text = LAYOUTS["nbformat-list"]
    line, col = _at(SourceLocator(text), 2, 2, 6)  # `XLA_USE_BF16` of `%env XLA_USE_BF16=1`
    assert text.split("\n")[line - 1].strip() == '"%env XLA_USE_BF16=1\\n",'
    assert _char_at(text, line, col).startswith("XLA_USE_BF16=1")
    compact = LAYOUTS["compact-list"]
    assert "\n" not in compact
    line, col = _at(SourceLocator(compact), 2, 2, 6)
    assert line == 1 and compact[col - 1 :].startswith("XLA_USE_BF16=1")


def test_source_as_one_string_is_one_json_line():
    text = LAYOUTS["nbformat-string"]
    locator = SourceLocator(text)
    first, _ = _at(locator, 2, 1, 1)
    second, col = _at(locator, 2, 2, 6)
    assert first == second  # a JSON string never spans lines
    assert _char_at(text, second, col).startswith("XLA_USE_BF16=1\\nprint")


def test_escapes_before_the_place_are_counted():
    """``\\t``, ``\\u00e9`` and the surrogate pair of a character outside the BMP each decode to
    one character of the cell."""
    data = _notebook(True)
    data["cells"][1]["source"] = ["s = '\té😀'; os.environ['XLA_USE_BF16'] = '1'\n"]
    text = json.dumps(data, indent=1, ensure_ascii=True)
    assert "\\ud83d\\ude00" in text
    col_in_cell = data["cells"][1]["source"][0].index("XLA_USE_BF16") + 1
    line, col = _at(SourceLocator(text), 2, 1, col_in_cell)
    assert _char_at(text, line, col).startswith("XLA_USE_BF16")


def test_unknown_cell_or_line_and_an_empty_cell():
    text = LAYOUTS["nbformat-list"]
    locator = SourceLocator(text)
    assert locator.position(9, 1, 1) is None
    assert locator.position(2, 9, 1) is None
    line, col = _at(locator, 3, 1, 1)  # "source": [] -- the list itself
    assert _char_at(text, line, col).startswith("[]")
    line, col = _at(locator, 2, 1, 99)  # past the line's end: its end (the escaped newline)
    assert _char_at(text, line, col).startswith("\\n")


def test_filter_findings_locates_a_cell_finding_and_the_output_points_there(tmp_path):
    text = LAYOUTS["nbformat-list"]
    path = str(tmp_path / "nb.ipynb")
    d = Diagnostic("BFM110", f"{path}#cell2", 2, 6, "XLA_USE_BF16 reaches no script", False)
    other = Diagnostic("BFM090", str(tmp_path / "Makefile"), 3, 1, "m", False)
    filtered = filter_findings([d, other], Selection(), {path: text})
    located, plain = filtered.reported
    assert located == d and plain.file_position is None  # equality ignores the position
    assert located.file_position is not None
    line, col = located.file_position
    assert _char_at(text, line, col).startswith("XLA_USE_BF16=1")
    assert location(located) == (path, line, col, "cell 2, line 2, col 6: ")
    # the text output names the cell (docs/usage.md), whether or not the notebook's text is at hand
    assert format_text(located, dry_run=False) == f"{path}#cell2:2:6: BFM110 XLA_USE_BF16 reaches no script"
    assert format_text(d, dry_run=False) == f"{path}#cell2:2:6: BFM110 XLA_USE_BF16 reaches no script"
    assert location(d) == (path, None, None, "cell 2, line 2, col 6: ")


@pytest.mark.parametrize("layout", ["nbformat-list", "compact-list", "spaced-ascii-string"])
def test_cli_outputs_point_at_the_ipynb_line(tmp_path, monkeypatch, layout):
    """Through the CLI: the ``%env`` setting reaches no script (BFM110, left to do), reported at
    the line of the .ipynb in SARIF and GitHub; text and JSON name the cell's place."""
    monkeypatch.chdir(tmp_path)
    text = LAYOUTS[layout]
    (tmp_path / "nb.ipynb").write_text(text)
    expected = _at(SourceLocator(text), 2, 2, 6)
    runner = CliRunner()
    out = runner.invoke(main, ["nb.ipynb", "--check"]).stdout
    [line] = [x for x in out.splitlines() if "BFM110" in x]
    assert line.startswith("nb.ipynb#cell2:2:6: BFM110 ")
    gh = runner.invoke(main, ["nb.ipynb", "--check", "--output-format", "github"]).stdout
    [line] = [x for x in gh.splitlines() if "BFM110" in x]
    assert line.startswith(
        f"::error file=nb.ipynb,line={expected[0]},col={expected[1]},title=BFM110::cell 2, line 2, col 6: "
    )
    sarif = json.loads(runner.invoke(main, ["nb.ipynb", "--check", "--output-format", "sarif"]).stdout)
    [result] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "BFM110"]
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": expected[0],
        "startColumn": expected[1],
    }
    doc = json.loads(runner.invoke(main, ["nb.ipynb", "--check", "--json"]).stdout)
    [found] = [x for x in doc["diagnostics"] if x["code"] == "BFM110"]
    assert (found["path"], found["line"], found["col"]) == ("nb.ipynb#cell2", 2, 6) and "file_position" not in found


def test_a_written_notebook_is_located_in_its_text_before_the_write(tmp_path, monkeypatch):
    """A run that writes the notebook reports the places of the text it read (as for every
    file), so the lines are those of the notebook before the change."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("import torch\nimport torch_xla\nprint(torch.ones(2))\n")
    data = _notebook(True)
    data["cells"].insert(
        1,
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "aa",
            "metadata": {},
            "outputs": [],
            "source": ["%env XLA_USE_BF16=0\n", "%env XLA_USE_BF16=1\n", "!python train.py"],
        },
    )
    text = nbformat.writes(nbformat.from_dict(data))
    (tmp_path / "nb.ipynb").write_text(text)
    before = SourceLocator(text)
    result = CliRunner().invoke(main, ["nb.ipynb", "train.py", "--output-format", "github"])
    lines = [x for x in result.stdout.splitlines() if "file=nb.ipynb" in x and "cell 2, line 2," in x]
    assert lines, result.stdout
    line, col = _at(before, 2, 2, 6)
    assert all(f"line={line},col={col}," in x for x in lines), lines


def test_a_notebook_without_cell_ids_is_read_quietly_and_keeps_its_json(tmp_path):
    """nbformat warns on stderr about a format-4.5 notebook whose cells have no ``id`` (and adds
    ids to its own copy); bf16-migrate says nothing of it and adds none: only the edited cell's
    source changes."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("Sets XLA_USE_BF16 off."),
        nbformat.v4.new_code_cell("%env XLA_USE_BF16=0\nprint('ok')"),
    ]
    data = json.loads(nbformat.writes(nb))
    data["nbformat_minor"] = 5
    for cell in data["cells"]:
        cell.pop("id", None)
    path = tmp_path / "quick_run.ipynb"
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    for args in (["--check"], []):
        # a new process: pytest records warnings itself, the user's terminal would show them
        command = [sys.executable, "-c", "from bf16_migrate.cli import main; main()", str(path), *args]
        result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode in (0, 1), result.stdout + result.stderr
        assert "Warning" not in result.stderr, result.stderr
    after = json.loads(path.read_text(encoding="utf-8"))
    assert all("id" not in cell for cell in after["cells"])
    assert "".join(after["cells"][1]["source"]) == "print('ok')"  # the false setting removed (BFM002)
    after["cells"][1]["source"] = data["cells"][1]["source"]
    assert after == data
