"""The migrated module's code taken from the parsed text where its statements are the original's
(``FileContext.module_code``) is libcst's rendering of the whole module, byte for byte: every
fixture migrated in every mode, each rendering compared."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from bf16_migrate.python import MODES, ParseError, migrate_source
from bf16_migrate.python.context import FileContext
from bf16_migrate.rules import load_rules

from conftest import FIXTURES

SCRIPTS = sorted(p for p in FIXTURES.rglob("*.py") if "expected" not in p.parts)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_module_code_is_the_rendering_of_the_whole_module(mode, monkeypatch):
    real = FileContext.module_code
    compared = []

    def checked(self: FileContext, new: cst.Module) -> str:
        code = real(self, new)
        assert code == new.code, self.path
        compared.append(self.path)
        return code

    monkeypatch.setattr(FileContext, "module_code", checked)
    for path in SCRIPTS:
        try:
            migrate_source(path.read_text(), mode, str(path))
        except (ParseError, UnicodeDecodeError):
            continue
    assert len(compared) > 20  # the fixtures the mode changes


def test_module_code_of_statements_moved_added_and_left_out():
    source = "# head\n\nimport os\n\n\ndef f():\n    return 1\n\n\nx = f()  # tail\n\n# footer\n"
    module = cst.parse_module(source)
    ctx = FileContext("t.py", MetadataWrapper(module, unsafe_skip_copy=True), load_rules(), source=source)
    body = list(module.body)
    added = cst.parse_statement("y = 2\n")
    for new_body in ([body[2], body[0], body[1]], [added, *body], body[1:], [], [body[0], added, body[2]]):
        new = module.with_changes(body=new_body)
        assert ctx.module_code(new) == new.code
