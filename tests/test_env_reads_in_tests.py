"""Tests read the legacy variables and set them through helpers of their own (the shape of
torch-xla's test/test_data_type.py): every such place is a BFM052 finding, the file is not
rewritten. Golden files of the fixture: tests/test_shapes.py (fixtures/shapes/test_env_reads/)."""

from __future__ import annotations

import pytest

from bf16_migrate.python import migrate_source

from conftest import FIXTURES, LEGACY, MODES

SHAPE = FIXTURES / "shapes" / "test_env_reads" / "test_env_reads.py"


def codes(result):
    return [(d.line, d.code) for d in result.diagnostics]


@pytest.mark.parametrize("mode", MODES)
def test_fixture_is_left_alone_and_every_mention_is_bfm052(mode):
    source = SHAPE.read_text()
    result = migrate_source(source, mode, SHAPE.name)
    assert result.code == source
    assert result.diagnostics and {d.code for d in result.diagnostics} == {"BFM052"}
    assert not any(d.fixed for d in result.diagnostics)
    lines = source.splitlines()
    diagnosed = {d.line for d in result.diagnostics}
    for number, line in enumerate(lines, start=1):
        if any(f"{v}=" in line or f'"{v}"' in line for v in LEGACY):
            assert number in diagnosed, (number, line)


READS = [
    'import os\nflag = os.environ.get("XLA_USE_BF16")\n',
    'import os\nflag = os.getenv("XLA_DOWNCAST_BF16", "0")\n',
    'import os\nprint(os.getenv("XLA_USE_BF16"))\n',
    'def check_env_flag(name):\n    return name\n\nassert not check_env_flag("XLA_USE_BF16")\n',
    'import os\nif "XLA_USE_BF16" in os.environ:\n    pass\n',
]


@pytest.mark.parametrize("source", READS)
def test_a_read_in_a_test_file_without_any_write(source):
    result = migrate_source(source, "stochastic", "tests/test_dtype.py")
    assert result.code == source
    assert [d.code for d in result.diagnostics] == ["BFM052"], [d.format_text() for d in result.diagnostics]
    assert "a test reads" in result.diagnostics[0].message
    # the same line in a script is the script's business (BFM050 or BFM042), unchanged
    script = migrate_source(source, "stochastic", "train.py")
    assert [d.code for d in script.diagnostics] in (["BFM050"], ["BFM042"])


def test_a_label_naming_the_variable_is_reported_with_the_read():
    """The text of an f-string names the variable too: in a test it is the test's (BFM052), in a
    script a string the codemod does not rewrite (BFM131); the read inside is reported as above."""
    source = "import os\nprint(f'XLA_USE_BF16: {os.getenv(\"XLA_USE_BF16\")}')\n"
    result = migrate_source(source, "stochastic", "tests/test_dtype.py")
    assert result.code == source
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("BFM052", 2, 9), ("BFM052", 2, 34)]
    assert "a test names XLA_USE_BF16 in a string" in result.diagnostics[0].message
    assert "a test reads" in result.diagnostics[1].message
    script = migrate_source(source, "stochastic", "train.py")
    assert [(d.code, d.line, d.col) for d in script.diagnostics] == [("BFM131", 2, 9), ("BFM050", 2, 34)]


HELPER_SETS = [
    "class T(unittest.TestCase):\n    def test_a(self):\n        self._set_env(XLA_USE_BF16='1')\n",
    "import os\nfrom unittest import mock\n\n"
    "@mock.patch.dict(os.environ, XLA_DOWNCAST_BF16='1')\ndef test_b():\n"
    "    pass\n",
    "def setUp(self):\n    set_flags(XLA_USE_BF16='1', OTHER='2')\n",
]


@pytest.mark.parametrize("path", ["test_dtype.py", "dtype_checks.py"])
@pytest.mark.parametrize("source", HELPER_SETS)
def test_a_keyword_named_like_a_legacy_variable_in_a_test_sets_it(source, path):
    result = migrate_source(source, "amp", path)
    assert result.code == source
    assert [d.code for d in result.diagnostics] == ["BFM052"], [d.format_text() for d in result.diagnostics]
    assert "a test sets XLA_" in result.diagnostics[0].message


def test_reads_in_a_test_function_of_a_script_do_not_stop_its_migration():
    source = (
        "import os\nimport torch\n\n"
        'os.environ["XLA_USE_BF16"] = "1"\n'
        "model = torch.nn.Linear(2, 2)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n"
        "def test_flag():\n"
        '    assert os.environ.get("XLA_USE_BF16") == "1"\n'
    )
    result = migrate_source(source, "stochastic", "train.py")
    assert "model.to(torch.bfloat16)" in result.code
    assert (10, "BFM052") in codes(result)
    assert not any(d.code in ("BFM050", "BFM042") for d in result.diagnostics)


def test_a_scripts_own_patch_dict_around_main_is_no_test():
    """``with mock.patch.dict(os.environ, {"XLA_USE_BF16": "1"}): main()`` in a script's
    ``if __name__ == "__main__":`` block sets the switch for the run: a form the codemod does not
    rewrite (BFM042), not a test's business (BFM052 told a hunt's evaluation script it was a test)."""
    source = (
        "import os\nfrom unittest import mock\nimport torch\n\n\ndef main():\n    print(torch.ones(2))\n\n\n"
        'if __name__ == "__main__":\n    with mock.patch.dict(os.environ, {"XLA_USE_BF16": "1"}):\n        main()\n'
    )
    result = migrate_source(source, "stochastic", "evaluate.py")
    codes = [d.code for d in result.diagnostics]
    assert "BFM042" in codes and "BFM052" not in codes and result.code == source
