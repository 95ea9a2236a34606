"""``# noqa``, ``--select`` and ``--ignore`` behave the same for every carrier: shell, YAML,
``.env``, Dockerfiles (a ``# noqa`` on the comment lines directly above an instruction, as
hadolint's ``# hadolint ignore=``) and notebooks (on the code cell's line); a noqa on a legacy
write keeps the file as it is, as in Python."""

from __future__ import annotations

import io
import json
import tokenize
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.suppress import ALL, noqa_by_line, noqa_by_part, noqa_comments

from conftest import FIXTURES

# the fixture without its own write of the switch and without the docstring's mention of it
TRAIN = (
    (FIXTURES / "mlp_regression" / "train.py")
    .read_text()
    .replace("through the XLA_USE_BF16 environment variable", "through an environment variable")
    .replace('os.environ["XLA_USE_BF16"] = "1"\n', "")
)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _notebook(*sources: str) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# A run"))
    for source in sources:
        nb.cells.append(nbformat.v4.new_code_cell(source))
    return nbformat.writes(nb)


# A setting that reaches no script (BFM110, left to do) in each carrier, and the line to put
# the noqa on (``None``: on the setting's own line, at its end).
CARRIERS = {
    "shell": ("run.sh", "#!/bin/bash\nexport XLA_USE_BF16=1{noqa}\necho hi\n"),
    "yaml": (
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n        - name: t\n"
        '          image: x\n          env:\n            - name: XLA_USE_BF16{noqa}\n              value: "1"\n',
    ),
    "dotenv": (".env", "XLA_USE_BF16=1{noqa}\n"),
    "dockerfile": ("Dockerfile", "FROM python:3.11\n{above}ENV XLA_USE_BF16=1\n"),
    "notebook": ("nb.ipynb", None),
    "procfile": ("Procfile", "web: python -m http.server\nworker: export XLA_USE_BF16=1; echo hi{noqa}\n"),
    "makefile": ("Makefile", "all:\n\texport XLA_USE_BF16=1; echo hi{noqa}\n"),
}


def _carrier(tmp_path: Path, kind: str, comment: str) -> Path:
    name, template = CARRIERS[kind]
    path = tmp_path / name
    if kind == "notebook":
        path.write_text(_notebook(f"%env XLA_USE_BF16=1{'  ' + comment if comment else ''}\nprint(1)"))
    elif kind == "dockerfile":
        assert template is not None
        path.write_text(template.format(above=f"{comment}\n" if comment else ""))
    else:
        assert template is not None
        path.write_text(template.format(noqa=f"  {comment}" if comment else ""))
    return path


def _run(tmp_path, *args):
    result = invoke(tmp_path, "--check", "--json", *args)
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("kind", sorted(CARRIERS))
def test_select_ignore_and_noqa_are_the_same_for_every_carrier(tmp_path, kind):
    _carrier(tmp_path, kind, "")
    code, doc = _run(tmp_path)
    assert code == 1 and [d["code"] for d in doc["diagnostics"]] == ["BFM110"]
    for option in (("--ignore", "BFM110"), ("--ignore", "BFM1"), ("--select", "BFM001")):
        code, doc = _run(tmp_path, *option)
        assert code == 0 and doc["diagnostics"] == [] and [d["code"] for d in doc["suppressed"]] == ["BFM110"], option


@pytest.mark.parametrize("kind", sorted(CARRIERS))
@pytest.mark.parametrize(
    "comment, suppressed",
    [("# noqa: BFM110", True), ("# noqa", True), ("# NOQA:BFM050,BFM110", True), ("# noqa: BFM050", False)],
)
def test_a_noqa_in_each_carriers_syntax(tmp_path, kind, comment, suppressed):
    _carrier(tmp_path, kind, comment)
    code, doc = _run(tmp_path)
    if suppressed:
        assert code == 0 and doc["diagnostics"] == [] and [d["code"] for d in doc["suppressed"]] == ["BFM110"]
        sarif = json.loads(invoke(tmp_path, "--check", "--output-format", "sarif").stdout)
        [result] = sarif["runs"][0]["results"]
        assert result["suppressions"] == [{"kind": "inSource"}]
    else:
        assert code == 1 and [d["code"] for d in doc["diagnostics"]] == ["BFM110"]


# -- Dockerfiles ---------------------------------------------------------------------------------


def test_dockerfile_noqa_is_read_above_the_instruction_and_covers_its_lines():
    text = (
        "# syntax=docker/dockerfile:1\n"  # 1
        "FROM python:3.11\n"  # 2
        "# hadolint ignore=DL3008\n"  # 3
        "# noqa: BFM001\n"  # 4
        "ENV A=1 \\\n"  # 5
        "    XLA_USE_BF16=1\n"  # 6
        "\n"  # 7
        "# noqa\n"  # 8
        "\n"  # 9
        "RUN echo a \\\n"  # 10
        "# noqa: BFM110\n"  # 11 (inside RUN's continuation: RUN's, not CMD's)
        "  && echo b\n"  # 12
        "CMD python train.py # noqa\n"  # 13 (an argument of CMD, no comment)
    )
    assert noqa_by_line(text, "dockerfile") == {5: {"BFM001"}, 6: {"BFM001"}}
    assert noqa_by_line("ENV X=1 # noqa\n", "dockerfile") == {}
    assert noqa_by_line("# noqa\nENV X=1\n# noqa: BFM120\nENV Y=1\n", "dockerfile") == {2: ALL, 4: {"BFM120"}}


def test_dockerfile_noqa_on_a_legacy_write_keeps_the_file_and_the_script_is_migrated(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    dockerfile = tmp_path / "Dockerfile"
    text = (
        "FROM python:3.11\n# hadolint ignore=DL3008\n# noqa: BFM001\n"
        'ENV PJRT_DEVICE=CPU \\\n    XLA_USE_BF16=1\nCMD ["python", "train.py"]\n'
    )
    dockerfile.write_text(text)
    code, doc = _run(tmp_path)
    assert [d["code"] for d in doc["suppressed"]] == ["BFM001"] and doc["suppressed"][0]["line"] == 5
    assert doc["kept"] == [
        {"path": str(dockerfile), "reason": "`# noqa` on line 3, for line 5, a legacy setting (BFM001)"}
    ]
    result = invoke(tmp_path)
    assert dockerfile.read_text() == text  # left as it is
    assert "model.to(torch.bfloat16)" in (tmp_path / "train.py").read_text()  # its script still migrated
    assert "left as it is: " in result.stderr


def test_dockerfile_noqa_of_another_code_or_not_directly_above_keeps_nothing(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    dockerfile = tmp_path / "Dockerfile"
    for text in (
        'FROM python:3.11\n# noqa: BFM120\nENV XLA_USE_BF16=1\nCMD ["python", "train.py"]\n',
        'FROM python:3.11\n# noqa\n\nENV XLA_USE_BF16=1\nCMD ["python", "train.py"]\n',
        'FROM python:3.11\n# noqa\nENV PJRT_DEVICE=CPU\nENV XLA_USE_BF16=1\nCMD ["python", "train.py"]\n',
    ):
        dockerfile.write_text(text)
        code, doc = _run(tmp_path)
        assert doc["kept"] == [] and "Dockerfile" in [
            Path(d["path"]).name for d in doc["diagnostics"] if d["code"] == "BFM001"
        ], text


# -- notebooks -------------------------------------------------------------------------------------


def test_notebook_noqa_is_read_per_cell_in_the_cells_syntax():
    text = _notebook(
        'import os  # noqa: BFM050\nx = "# noqa"\n"""\n# noqa\n"""',
        "%env XLA_USE_BF16=1  # noqa: BFM001\n!python train.py  # noqa\n%%capture is no cell magic here # noqa: BFM131",
        "%%bash\nexport XLA_USE_BF16=1 # noqa: BFM110\necho '#noqa'x",
    )
    assert noqa_by_part(text, "notebook") == {
        "#cell2": {1: {"BFM050"}},
        "#cell3": {1: {"BFM001"}, 2: ALL, 3: {"BFM131"}},
        "#cell4": {2: {"BFM110"}},
    }
    assert noqa_by_line(text, "notebook") == {}  # no line of the file itself


def test_notebook_noqa_on_a_legacy_write_keeps_the_notebook(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    nb = tmp_path / "nb.ipynb"
    text = _notebook("!XLA_USE_BF16=1 python train.py  # noqa: BFM001")
    nb.write_text(text)
    code, doc = _run(tmp_path)
    assert doc["kept"] == [{"path": str(nb), "reason": "`# noqa` in cell 2, line 1, a legacy setting (BFM001)"}]
    assert [(d["code"], d["path"]) for d in doc["suppressed"]] == [("BFM001", f"{nb}#cell2")]
    invoke(tmp_path)
    assert nb.read_text() == text
    assert "model.to(torch.bfloat16)" in (tmp_path / "train.py").read_text()


def test_notebook_without_the_noqa_is_migrated(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    nb = tmp_path / "nb.ipynb"
    nb.write_text(_notebook("!XLA_USE_BF16=1 python train.py  # noqa: BFM120"))  # another code: no hold
    code, doc = _run(tmp_path)
    assert doc["kept"] == [] and ("BFM001", f"{nb}#cell2") in [(d["code"], d["path"]) for d in doc["diagnostics"]]
    invoke(tmp_path)
    assert "XLA_USE_BF16" not in "".join(
        c.source for c in nbformat.reads(nb.read_text(), as_version=4).cells if c.cell_type == "code"
    )


def test_notebook_noqa_in_a_python_line_and_not_in_a_string(tmp_path):
    nb = tmp_path / "nb.ipynb"
    nb.write_text(
        _notebook(
            'import os\nimport torch\nos.environ["XLA_USE_BF16"] = "1"  # noqa: BFM010\n'
            'print(torch.ones(2, device="xla"))'
        )
    )
    code, doc = _run(tmp_path)
    assert code == 0 and [(d["code"], d["line"]) for d in doc["suppressed"]] == [("BFM010", 3)], doc
    nb.write_text(
        _notebook(
            'import os\nimport torch\nos.environ["XLA_USE_BF16"] = "1"; print("# noqa")\n'
            'print(torch.ones(2, device="xla"))'
        )
    )
    code, doc = _run(tmp_path)
    assert (
        code == 1 and [d["line"] for d in doc["diagnostics"]] == [3] and doc["suppressed"] == []
    )  # a string is no comment


# -- unused noqa (BFM900, as ruff's RUF100) ---------------------------------------------------------

RUN_SH = "#!/bin/bash\nexport XLA_USE_BF16=1{noqa}\necho hi{other}\n"


def _sh(tmp_path, noqa="", other=""):
    (tmp_path / "run.sh").write_text(RUN_SH.format(noqa=noqa, other=other))


def _codes(doc, key="diagnostics"):
    return [(d["code"], Path(d["path"]).name, d["line"], d["col"]) for d in doc[key]]


def test_unused_noqa_is_in_the_catalogue_and_not_fixable():
    from bf16_migrate.rules import load_rules

    rule = load_rules().diagnostics["BFM900"]
    assert rule.title == "unused-noqa" and rule.fixable is False


def test_unused_noqa_is_opt_in(tmp_path):
    _sh(tmp_path, other="  # noqa: BFM050")
    code, doc = _run(tmp_path)
    assert [c for c, *_ in _codes(doc)] == ["BFM110"]  # default selection: not reported
    code, doc = _run(tmp_path, "--select", "BFM900")
    assert code == 1 and _codes(doc) == [("BFM900", "run.sh", 3, 10)]
    assert doc["diagnostics"][0]["message"].startswith("unused `noqa` directive (unused: BFM050)")
    assert [c for c, *_ in _codes(doc, "suppressed")] == ["BFM110"]  # not selected
    code, doc = _run(tmp_path, "--select", "BFM")
    assert [c for c, *_ in _codes(doc)] == ["BFM110", "BFM900"]
    code, doc = _run(tmp_path, "--select", "BFM9")
    assert [c for c, *_ in _codes(doc)] == ["BFM900"]
    code, doc = _run(tmp_path, "--select", "BFM", "--ignore", "BFM900")
    assert [c for c, *_ in _codes(doc)] == ["BFM110"]


def test_a_used_noqa_is_not_reported_even_when_its_finding_is_not_selected(tmp_path):
    _sh(tmp_path, noqa="  # noqa: BFM110")
    code, doc = _run(tmp_path, "--select", "BFM900")
    assert code == 0 and doc["diagnostics"] == []
    code, doc = _run(tmp_path, "--select", "BFM")
    assert code == 0 and doc["diagnostics"] == [] and [c for c, *_ in _codes(doc, "suppressed")] == ["BFM110"]


def test_only_bfm_codes_are_looked_at(tmp_path):
    _sh(tmp_path, noqa="  # noqa: E501, BFM110, BFM050, SC2086", other="  # noqa")
    code, doc = _run(tmp_path, "--select", "BFM900")
    [d] = doc["diagnostics"]
    assert (d["code"], d["line"]) == ("BFM900", 2)
    assert "(unused: BFM050)" in d["message"] and "E501" not in d["message"] and "SC2086" not in d["message"]
    _sh(tmp_path, other="  # noqa: E501")  # another tool's code alone, and a bare noqa above: nothing
    code, doc = _run(tmp_path, "--select", "BFM900")
    assert code == 0 and doc["diagnostics"] == []


def test_unknown_codes_and_a_noqa_that_silences_the_report(tmp_path):
    _sh(tmp_path, other="  # noqa: BFM999, BFM050")
    code, doc = _run(tmp_path, "--select", "BFM900")
    [d] = doc["diagnostics"]
    assert "(unused: BFM050; unknown: BFM999)" in d["message"]
    _sh(tmp_path, other="  # noqa: BFM900, BFM050")
    code, doc = _run(tmp_path, "--select", "BFM900")
    assert code == 0 and doc["diagnostics"] == [] and [c for c, *_ in _codes(doc, "suppressed")] == ["BFM110", "BFM900"]


def test_unused_noqa_changes_no_file(tmp_path):
    _sh(tmp_path, other="  # noqa: BFM050")
    before = (tmp_path / "run.sh").read_text()
    result = invoke(tmp_path, "--select", "BFM900")
    assert result.exit_code == 1 and (tmp_path / "run.sh").read_text() == before
    assert "BFM900" in result.stdout and "[fixed]" not in result.stdout


def test_unused_noqa_in_a_dockerfile_and_a_notebook(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.11\n# noqa: BFM110\nENV XLA_USE_BF16=1\n# noqa: BFM001\nRUN echo hi\n"
    )
    (tmp_path / "nb.ipynb").write_text(_notebook("%env XLA_USE_BF16=1  # noqa: BFM110\nx = 1  # noqa: BFM131"))
    code, doc = _run(tmp_path, "--select", "BFM900")
    assert _codes(doc) == [("BFM900", "Dockerfile", 4, 1), ("BFM900", "nb.ipynb#cell2", 2, 8)]
    assert "in the instruction under it" in doc["diagnostics"][0]["message"]
    text = invoke(tmp_path, "--check", "--select", "BFM900").stdout
    [line] = [x for x in text.splitlines() if "nb.ipynb" in x]
    assert line.startswith(f"{tmp_path / 'nb.ipynb'}#cell2:2:8: BFM900 unused `noqa` directive (unused: BFM131)")


def test_unused_noqa_in_python_and_the_file_is_migrated_as_before(tmp_path):
    script = tmp_path / "train.py"
    source = TRAIN.replace("import os\n", "import os  # noqa: BFM050\n", 1)
    assert source != TRAIN
    script.write_text(source)
    (tmp_path / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py\n")
    code, doc = _run(tmp_path, "--select", "BFM900")
    assert [(c, f) for c, f, *_ in _codes(doc)] == [("BFM900", "train.py")]
    assert "model.to(torch.bfloat16)" in "".join(e["content"] for f in doc["edits"] for e in f["edits"])


def test_python_noqa_reads_the_tokens_up_to_the_last_line_that_names_noqa():
    """The comments found are those of the whole file's tokens: a ``# noqa`` inside a string
    (one line, or a triple-quoted string opened before it) is none, one on a line of a bracketed
    import is, and the lines after the last ``noqa`` are not read."""
    text = (
        "import os  # noqa: BFM001\n"
        'doc = """\n# noqa: BFM002\n"""\n'
        "from pathlib import (  # NOQA: BFM003\n    Path,\n)\n"
        "s = '# noqa: BFM004'\n" + "x = 1  # a comment\n" * 200
    )
    every = [
        (token.start[0], token.start[1] + 1)
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT and "noqa" in token.string.lower()
    ]
    assert [(n.line, n.col) for n in noqa_comments(text, "python")] == every == [(1, 12), (5, 24)]
