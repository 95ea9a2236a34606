"""One walk, one parse: what a run reads beyond the files it is given, and how often.

- ``bf16-migrate train.py`` looks for the script's launchers in the project its version control
  or configuration gives, and, for a script in no project, beside it only (not in every folder
  under its own: a script in a home directory of 180,000 files walked them all);
- a script's imports are parsed (``ast``) only when their words can name a module of the tree
  (``carriers.resolve.may_import_tree``), with the same answer as parsing it always;
- a module of the tree a script imports is parsed by libcst for its optimizer factories only
  when its words can make an optimizer (``tree_modules.may_offer_optimizers``), once per run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf16_migrate.carriers.resolve import may_import_tree, named_tree_imports, named_tree_imports_of
from bf16_migrate.cli import main
from bf16_migrate.scan import project_root
from bf16_migrate.tree_modules import TreeFactsReader, may_offer_optimizers

from conftest import FIXTURES

LEGACY_SCRIPT = (FIXTURES / "mlp_regression" / "train.py").read_text()
RUN_SH = '#!/usr/bin/env bash\nexport XLA_USE_BF16=1\npython train.py "$@"\n'


def test_a_script_in_no_project_brings_in_the_launchers_beside_it_only(tmp_path, monkeypatch):
    loose = tmp_path / "loose"
    (loose / "jobs").mkdir(parents=True)
    (loose / "train.py").write_text(LEGACY_SCRIPT)
    if project_root(loose / "train.py") is not None:  # pragma: no cover - a marker above the temporary directory
        pytest.skip(f"{project_root(loose / 'train.py')} holds a project marker")
    (loose / "run.sh").write_text(RUN_SH)
    (loose / "jobs" / "nightly.sh").write_text('export XLA_USE_BF16=1\npython ../train.py "$@"\n')
    monkeypatch.chdir(loose)
    result = CliRunner().invoke(main, ["train.py", "--check"])
    assert "run.sh" in result.output, result.output
    assert "nightly.sh" not in result.output, result.output
    # in a project (here its version control), every folder of it is looked in
    (loose / ".git").mkdir()
    result = CliRunner().invoke(main, ["train.py", "--check"])
    assert "run.sh" in result.output and "jobs/nightly.sh" in result.output, result.output


def _fixture_scripts() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.py") if "expected" not in p.parts)


def test_imports_are_parsed_only_when_they_can_name_the_tree():
    """For every Python file of the fixtures, the tree imports found with the byte check are
    those found by parsing it always; and the check does say no for some (nothing is parsed)."""
    skipped = 0
    for path in _fixture_scripts():
        text = path.read_text()
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for root in (path.parent, FIXTURES):
            assert named_tree_imports_of(path, text, root) == named_tree_imports(path, tree, root), path
            skipped += not may_import_tree(path, text, root)
    assert skipped > 20


def test_the_import_check_reads_every_spelling(tmp_path):
    (tmp_path / "optim_utils.py").write_text("")
    (tmp_path / "pkg").mkdir()
    script = tmp_path / "train.py"
    spellings = {
        "import os, torch\n": False,
        "import os, optim_utils as ou\n": True,
        "from optim_utils import build\n": True,
        "from pkg.sub import x\n": True,
        "if True: import optim_utils\n": True,
        "x = 1; import optim_utils\n": True,
        "import os, \\\n    optim_utils\n": True,
        "from . import helpers\n": True,  # a relative import of no module: always parsed
        "from .helpers import f\n": False,  # no helpers.py, no helpers/ in the script's package
        "from .optim_utils import f\n": True,
        "from .pkg.sub import x\n": True,
        "from .pkg import (\n    x,\n)\n": True,
        "import os\nfrom .helpers import f\nfrom .optim_utils import g\n": True,
        "def f():\n    from torch import nn\n": False,
        "from os import (\n    path,\n    sep,\n)\n": False,
    }
    for text, expected in spellings.items():
        assert may_import_tree(script, text, tmp_path) is expected, text
        if not expected:
            assert named_tree_imports(script, ast.parse(text), tmp_path) == []
    # two dots: the package above the script's
    nested = tmp_path / "pkg" / "train.py"
    for text, expected in {"from ..optim_utils import f\n": True, "from ..helpers import f\n": False}.items():
        assert may_import_tree(nested, text, tmp_path / "pkg") is expected, text
        if not expected:
            assert named_tree_imports(nested, ast.parse(text), tmp_path / "pkg") == []


def test_a_sibling_module_is_parsed_for_its_optimizers_only_when_its_words_can_make_one(tmp_path, monkeypatch):
    import bf16_migrate.tree_modules as tree_modules

    (tmp_path / "utils.py").write_text("def log(x):\n    print(x)\n")
    (tmp_path / "optim.py").write_text(
        "import torch\n\ndef build(model):\n    return torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
    )
    script = tmp_path / "train.py"
    text = "import utils\nimport optim\n" + LEGACY_SCRIPT
    parsed: list[str] = []
    real = tree_modules.module_facts_of

    def counting(source: str, path: str, name: str):
        parsed.append(name)
        return real(source, path, name)

    monkeypatch.setattr(tree_modules, "module_facts_of", counting)
    reader = TreeFactsReader(lambda path: (path.read_text(), "utf-8"), lambda path: tmp_path)
    facts = reader(script, text)
    assert parsed == ["optim"]  # utils.py names no optimizer: not parsed
    assert facts is not None and [m.name for m in facts.modules] == ["optim"]
    assert reader(script, text) is facts and parsed == ["optim"]  # asked again: the same answer, no read
    assert not may_offer_optimizers("def log(x):\n    print(x)\n")
    for words in ("torch.optim.SGD(params)", "from transformers import AdamW", "m.parameters()", "Optimizer"):
        assert may_offer_optimizers(words), words
