"""Byte fidelity and messages: form feeds and line ends survive the codemod, the code it emits
never names a legacy variable, Dockerfile continuations are read as Docker reads them, and a
notebook that is not a JSON object is one clean error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bf16_migrate.carriers import CarrierError, analyze
from bf16_migrate.project import migrate_paths
from bf16_migrate.python import ParseError, migrate_source
from bf16_migrate.python.snippets import BF16_INPUTS_SOURCE, MASTER_WEIGHTS_SOURCE

from conftest import FIXTURES, MODES
from goldens import golden_pairs

ALL_MODES = (*MODES, "reference")
LEGACY = re.compile(r"XLA_(?:USE|DOWNCAST)_(?:BF16|FP16)")
BARE_LF = re.compile(r"(?<!\r)\n")


# -- 1. form feeds ------------------------------------------------------------------------------

FF_REPRO = (
    "import os\n"
    "import torch\n"
    "\x0cdef f():\n"
    "    pass\n"
    'os.environ["XLA_USE_BF16"] = "1"\n'
    "model = torch.nn.Linear(2,2)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
)

# form feeds where libcst drops them (statement indentation, a dedent after one), adds them (the
# first line of a block sets the indentation of the block) or keeps them (blank lines, strings);
# the class body, a form feed on its first line then a nested block and a dedent, is also what
# libcst's own tokenizer rejects although Python accepts it
FF_EVERYWHERE = (
    "import os\n"
    "\x0c\n"
    "\x0cimport torch\n"
    "class Net(torch.nn.Module):\n"
    '\x0c    """A net."""\n'
    "    def forward(self, x):\n"
    "        return x\n"
    "\x0c    def extra(self):\n"
    "        pass\n"
    "    \x0cy = 1\n"
    'TEXT = """\n'
    '\x0c  kept in the string"""\n'
    '\x0cos.environ["XLA_USE_BF16"] = "1"\n'
    "model = Net()\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
)
FF_UNTOUCHED = FF_EVERYWHERE.replace('\x0cos.environ["XLA_USE_BF16"] = "1"\n', "")


@pytest.mark.parametrize("mode", ALL_MODES)
def test_form_feed_before_an_untouched_def_is_kept(mode):
    """The reported case: the form feed before ``def f():`` (a line no edit touches) stays;
    the output is the one of the same file without it, byte for byte otherwise."""
    plain = migrate_source(FF_REPRO.replace("\x0c", ""), mode, "ff2.py").code
    assert plain.count("\ndef f():\n") == 1
    assert migrate_source(FF_REPRO, mode, "ff2.py").code == plain.replace("\ndef f():\n", "\n\x0cdef f():\n")


def test_form_feeds_everywhere_reference_mode_exact_bytes():
    result = migrate_source(FF_EVERYWHERE, "reference", "ff.py")
    assert result.code == FF_UNTOUCHED
    assert [d.format_text() for d in result.diagnostics] == [
        "ff.py:13:13: BFM001 XLA_USE_BF16 removed (FP32 reference run) [fixed]",
    ]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_every_untouched_line_with_a_form_feed_is_byte_identical(mode):
    code = migrate_source(FF_EVERYWHERE, mode, "ff.py").code
    lines = code.splitlines(keepends=True)
    for line in FF_UNTOUCHED.splitlines(keepends=True):
        if "\x0c" in line:
            assert line in lines, (line, code)
    # inserted code has no form feed: every output line with one is a line of the input
    source_lines = FF_EVERYWHERE.splitlines(keepends=True)
    assert [line for line in lines if "\x0c" in line and line not in source_lines] == []


def test_form_feeds_in_stochastic_mode_exact_bytes_and_columns():
    result = migrate_source(FF_EVERYWHERE, "stochastic", "ff.py")
    helpers = "\n\n" + BF16_INPUTS_SOURCE.lstrip("\n") + "\n\n"  # after the imports, PEP 8 blank lines
    assert result.code == (
        "import os\n"
        "\x0c\n"
        "\x0cimport torch\n" + helpers + "class Net(torch.nn.Module):\n"
        '\x0c    """A net."""\n'
        "    def forward(self, x):\n"
        "        return x\n"
        "\x0c    def extra(self):\n"
        "        pass\n"
        "    \x0cy = 1\n"
        'TEXT = """\n'
        '\x0c  kept in the string"""\n'
        'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"\n'
        "model = Net()\n"
        "model.to(torch.bfloat16)\n"
        "model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    )
    # columns count the form feed, as an editor does: the string starts at 13 on line 13
    assert [d.format_text() for d in result.diagnostics] == [
        "ff.py:13:13: BFM001 XLA_USE_BF16 replaced: model cast to torch.bfloat16, "
        "floating inputs cast, NEURON_RT_STOCHASTIC_ROUNDING_EN=1 [fixed]",
        "ff.py:15:23: BFM022 `model` casts its floating inputs to bf16 at run time (bf16_inputs_hook, a "
        "forward pre-hook; integer inputs untouched), since it is not called in this file [fixed]",
    ]


def test_a_file_with_form_feeds_and_nothing_to_edit_is_returned_as_it_is():
    source = 'import os\n\x0cdef f():\n    """Reads XLA_USE_BF16."""\n\x0c    x = 1\n    \x0cy = 2\n'
    result = migrate_source(source, "stochastic", "doc.py")
    assert result.code == source
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("BFM091", 3, 14)]


def test_column_after_a_form_feed_inside_the_indentation():
    """BFM042 points at the string literal: column 9 without the form feed, 10 with it."""
    source = 'def f():\n    x = 1\n    y = "XLA_USE_BF16"\n'
    assert [(d.code, d.line, d.col) for d in migrate_source(source, "stochastic", "f.py").diagnostics] == [
        ("BFM042", 3, 9)
    ]
    source = source.replace("    y =", "\x0c    y =")
    result = migrate_source(source, "stochastic", "f.py")
    assert result.code == source
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("BFM042", 3, 10)]


# -- 2. line ends -------------------------------------------------------------------------------


def _sources():
    """The fixtures' scripts (gpu-compatible inserts the master-weights helper into them) and
    a script whose model is never called (the input-cast helpers are inserted)."""
    yield from ((path.parent.name, path.read_text()) for path in sorted(FIXTURES.glob("*/train.py")))
    yield "uncalled.py", FF_REPRO.replace("\x0c", "")


@pytest.mark.parametrize("mode", ALL_MODES)
def test_inserted_code_takes_the_files_line_ends(mode):
    """CRLF and CR files: the output is the LF output with the file's line end, inserted
    helpers' docstrings (line breaks inside one string token) included: no bare LF."""
    for name, source in _sources():
        for fp32_state in (False, True) if mode == "gpu-compatible" else (False,):
            lf = migrate_source(source, mode, name, fp32_optimizer_state=fp32_state).code
            assert "\r" not in lf, name
            if mode == "gpu-compatible" and name not in (
                "uncalled.py",
                "zero1_sharded",
            ):  # ZeRO-1 keeps its own master weights
                assert '    """Return a subclass of `optimizer_class`' in lf, name
            if mode == "gpu-compatible" and name == "resume_checkpoint":
                assert '    """torch.nn.utils.clip_grad_norm_ with the gradient norm' in lf
            for newline in ("\r\n", "\r"):
                out = migrate_source(source.replace("\n", newline), mode, name, fp32_optimizer_state=fp32_state).code
                assert out == lf.replace("\n", newline), (name, newline)
                assert not BARE_LF.search(out) if newline == "\r\n" else "\n" not in out, (name, newline)


def test_crlf_file_through_the_cli_matches_the_golden_with_crlf(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes((FIXTURES / "mlp_regression" / "train.py").read_bytes().replace(b"\n", b"\r\n"))
    outcome = migrate_paths([script], "gpu-compatible", write=True)
    assert not outcome.errors
    data = script.read_bytes()
    assert data == (FIXTURES / "mlp_regression" / "expected" / "gpu-compatible" / "train.py").read_bytes().replace(
        b"\n", b"\r\n"
    )
    assert b"def with_fp32_master_weights" in data and not re.search(rb"(?<!\r)\n", data)


def test_cr_file_keeps_its_last_line_end():
    """libcst takes a final CR for no line end at all; a file with nothing to change comes
    back as it was, and a changed one still ends with its CR."""
    doc = 'x = 1\r"""XLA_USE_BF16 docs."""\r\r'
    assert migrate_source(doc, "stochastic", "doc.py").code == doc
    source = (
        'import os\rimport torch\ros.environ["XLA_USE_BF16"] = "1"\rmodel = '
        "torch.nn.Linear(2, 2)\ropt = torch.optim.SGD(model.parameters(), lr=0.1)\r"
    )
    assert migrate_source(source, "reference", "cr.py").code == (
        "import os\rimport torch\rmodel = torch.nn.Linear(2, 2)\ropt = torch.optim.SGD(model.parameters(), lr=0.1)\r"
    )


# -- 3. emitted code never names a legacy variable ----------------------------------------------


def test_emitted_helpers_name_no_legacy_variable():
    assert not LEGACY.search(MASTER_WEIGHTS_SOURCE)
    assert not LEGACY.search(BF16_INPUTS_SOURCE)
    assert "replacing the legacy bf16 environment switch" in MASTER_WEIGHTS_SOURCE
    assert "replacing the legacy bf16 environment switch" in BF16_INPUTS_SOURCE


CALLED = FF_REPRO.replace("\x0c", "") + "loss = model(torch.randn(3, 2)).sum()\n"


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("source", [FF_REPRO.replace("\x0c", ""), CALLED], ids=["uncalled", "called"])
def test_a_migrated_file_no_longer_names_a_legacy_variable(mode, source):
    """No line the codemod adds names a variable; once every finding is fixed (the helpers
    inserted for an uncalled model, the master weights in gpu-compatible mode), the output
    matches no grep for the names and a second run finds nothing."""
    result = migrate_source(source, mode, "t.py", fp32_optimizer_state=True)
    before = source.splitlines()
    assert [line for line in result.code.splitlines() if line not in before and LEGACY.search(line)] == []
    if all(d.fixed for d in result.diagnostics):
        assert not LEGACY.search(result.code), result.code
        assert migrate_source(result.code, mode, "t.py").diagnostics == []
    if mode == "gpu-compatible":
        assert "def with_fp32_master_weights" in result.code and not LEGACY.search(result.code)
    if mode == "stochastic" and source != CALLED:
        assert "def floating_to_bf16" in result.code and not LEGACY.search(result.code)


def _golden_pairs():
    """(input file, golden output) of every golden (tests/goldens.py: one layout)."""
    yield from golden_pairs(FIXTURES)


def test_no_golden_output_adds_a_line_naming_a_legacy_variable():
    pairs = list(_golden_pairs())
    assert len(pairs) > 50
    for src, out in pairs:
        before = set(src.read_text().splitlines())
        added = [line for line in out.read_text().splitlines() if line not in before and LEGACY.search(line)]
        assert added == [], (out, added)


# -- 4. Dockerfile continuations ----------------------------------------------------------------

TRAIN = (
    "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "loss = model(torch.randn(3, 2)).sum()\n"
)


def _docker_run(tmp_path, monkeypatch, dockerfile: str, mode: str):
    (tmp_path / "Dockerfile").write_text(dockerfile)
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    outcome = migrate_paths([Path("Dockerfile"), Path("train.py")], mode, write=True)
    assert outcome.errors == []
    lines = [d.format_text() for d in outcome.diagnostics if d.path == "Dockerfile"]
    return (tmp_path / "Dockerfile").read_text(), lines


CONTINUED = (
    "FROM python:3.11\n"
    "ENV XLA_USE_BF16=1\n"
    "RUN pip install torch \\\n"
    "# a comment line\n"
    "\n"
    "    && XLA_USE_BF16=1 python train.py\n"
)


def test_dockerfile_comment_and_blank_line_inside_a_continuation(tmp_path, monkeypatch):
    """Docker skips the comment line and (with a warning) the blank line: the RUN goes on to
    `&& ... python train.py`, which is rewritten; not a 'BuildKit heredoc'."""
    text, lines = _docker_run(tmp_path, monkeypatch, CONTINUED, "amp")
    assert text == ("FROM python:3.11\nRUN pip install torch \\\n# a comment line\n\n    && python train.py\n")
    why = (
        "train.py now has forward and loss under torch.autocast (review it; `bf16-migrate verify "
        "train.py --legacy-env XLA_USE_BF16=1` compares it with the legacy run) [fixed]"
    )
    assert lines == [
        f"Dockerfile:2:5: BFM001 XLA_USE_BF16 removed; {why}",
        f"Dockerfile:6:8: BFM001 XLA_USE_BF16 removed; {why}",
    ]


def test_dockerfile_continuation_stochastic_keeps_the_skipped_lines(tmp_path, monkeypatch):
    text, _ = _docker_run(tmp_path, monkeypatch, CONTINUED, "stochastic")
    assert text == CONTINUED.replace("XLA_USE_BF16", "NEURON_RT_STOCHASTIC_ROUNDING_EN")


def test_dockerfile_env_pairs_over_skipped_lines(tmp_path, monkeypatch):
    dockerfile = (
        "FROM python:3.11\n"
        "ENV A=1 \\\n"
        "    # about the switch\n"
        "\n"
        "    XLA_USE_BF16=1 \\\n"
        "    B=2\n"
        'CMD ["python", "train.py"]\n'
    )
    text, lines = _docker_run(tmp_path, monkeypatch, dockerfile, "stochastic")
    assert text == dockerfile.replace("XLA_USE_BF16", "NEURON_RT_STOCHASTIC_ROUNDING_EN")
    assert [line.split(": BFM")[0] for line in lines] == ["Dockerfile:5:5"]


def test_dockerfile_unknown_instruction_is_named_as_such(tmp_path, monkeypatch):
    """Without the continuation `&& echo b` is an instruction Docker does not know: reported
    as that, not as a heredoc."""
    dockerfile = "FROM python:3.11\nENV XLA_USE_BF16=1\nRUN echo a\n    && echo b\n"
    text, lines = _docker_run(tmp_path, monkeypatch, dockerfile, "stochastic")
    assert text == dockerfile
    assert lines == [
        "Dockerfile:2:5: BFM131 XLA_USE_BF16 is named in a Dockerfile that has an unknown instruction (&&, "
        "line 4; docker build rejects it), which bf16-migrate does not parse: edit it by hand",
    ]


def test_dockerfile_heredoc_and_backquote_escape_messages():
    heredoc = analyze("dockerfile", "FROM x\nENV XLA_USE_BF16=1\nRUN <<EOF\necho hi\nEOF\n", "Dockerfile")
    assert [n[:4] for n in heredoc.notes] == [
        (
            "BFM131",
            2,
            5,
            "XLA_USE_BF16 is named in a Dockerfile that uses a BuildKit heredoc (line "
            "3), which bf16-migrate does not parse: edit it by hand",
        ),
    ]
    escape = analyze(
        "dockerfile", "# syntax=docker/dockerfile:1\n# escape=`\nFROM x\nENV XLA_USE_BF16=1\n", "Dockerfile"
    )
    assert [n[:4] for n in escape.notes] == [
        (
            "BFM131",
            4,
            5,
            "XLA_USE_BF16 is named in a Dockerfile that uses the backquote escape (line "
            "2), which bf16-migrate does not parse: edit it by hand",
        ),
    ]


# -- 5. notebooks that are not JSON objects -----------------------------------------------------


@pytest.mark.parametrize(
    "text, kind",
    [
        ('["XLA_USE_BF16"]\n', "a list"),
        ('"XLA_USE_BF16"\n', "a string"),
        ("16\n", "a number"),
        ("1.5\n", "a number"),
        ("true\n", "a boolean"),
        ("null\n", "null"),
    ],
)
def test_notebook_top_level_not_an_object(text, kind):
    with pytest.raises(CarrierError) as info:
        analyze("notebook", text, "nb.ipynb")
    assert str(info.value) == f"nb.ipynb: not a Jupyter notebook: top-level JSON is {kind}, not an object"


def test_notebook_list_through_the_cli_is_one_error_line(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text('["XLA_USE_BF16"]\n')
    outcome = migrate_paths([notebook], "stochastic", write=True)
    assert outcome.errors == [f"{notebook}: not a Jupyter notebook: top-level JSON is a list, not an object"]
    assert notebook.read_text() == '["XLA_USE_BF16"]\n'


def test_notebook_invalid_json_names_line_and_column():
    with pytest.raises(CarrierError) as info:
        analyze("notebook", '{\n "cells": [,\n "XLA_USE_BF16"}', "nb.ipynb")
    assert str(info.value) == "nb.ipynb:2:12: not valid notebook JSON: Expecting value"


# -- comments of removed statements ------------------------------------------------------------------
# The minimal script property (c) of test_properties.py found: the comment lines inside an
# `if args.bf16:` block that goes with its write were lost (only the `if`'s own leading lines were
# kept), and a comment moved to another block took that block's indentation.
COMMENTS_OF_REMOVED = (
    "import os\n"
    "import torch\n"
    "import torch.nn as nn\n"
    "import torch_xla.core.xla_model as xm\n"
    "\n"
    "\n"
    "def setup(args):\n"
    "    if args.bf16:  # precision\n"
    "        # set up\n"
    "      # shallower than its block\n"
    "            # deeper than its block\n"
    '        os.environ["XLA_USE_BF16"] = "0"\n'
    "        # last words\n"
    "\n"
    "\n"
    "def main():\n"
    "\t# tab-indented, above a removed write\n"
    '\tos.environ["XLA_USE_BF16"] = "1"\n'
    "\tdevice = xm.xla_device()\n"
    "\tmodel = nn.Linear(4, 2).to(device)\n"
    "\toptimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
    "\tx = torch.randn(8, 4).to(device)\n"
    "\tloss = model(x).sum()\n"
    "\tloss.backward()\n"
    "\toptimizer.step()\n"
)
COMMENTS_KEPT = (
    "def setup(args):\n"
    "        # set up\n"
    "      # shallower than its block\n"
    "            # deeper than its block\n"
    "        # last words\n"
    "    pass\n"
    "\n"
    "\n"
    "def main():\n"
    "\t# tab-indented, above a removed write\n"
    "\tdevice = xm.xla_device()\n"
)


@pytest.mark.parametrize("mode", ("gpu-compatible", "amp", "reference"))
def test_comments_of_a_removed_block_keep_their_bytes(mode):
    result = migrate_source(COMMENTS_OF_REMOVED, mode, "c.py")
    assert COMMENTS_KEPT in result.code
    assert [d.code for d in result.diagnostics] == ["BFM002", "BFM001"]


def test_comments_of_a_removed_block_amp_exact_bytes():
    assert migrate_source(COMMENTS_OF_REMOVED, "amp", "c.py").code == (
        COMMENTS_OF_REMOVED.split("def setup", 1)[0] + COMMENTS_KEPT + "\tmodel = nn.Linear(4, 2).to(device)\n"
        "\toptimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
        "\tx = torch.randn(8, 4).to(device)\n"
        '\twith torch.autocast("xla", dtype=torch.bfloat16):\n'
        "\t    loss = model(x).sum()\n"
        "\tloss.backward()\n"
        "\toptimizer.step()\n"
    )


def test_indentation_libcst_cannot_read_is_a_clear_error_at_its_line():
    """Python reads a space before a tab in an indentation (8-column tabs); libcst's tokenizer
    rejects it inside a tab-indented block (Instagram/LibCST#829). The file is that file's
    error, at the line, with what to do; never a crash, never a guess."""
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nif True:\n\ttry:\n    \t\tx = 1\n\texcept KeyError:\n\t\tpass\n'
    )
    compile(source, "t.py", "exec")
    with pytest.raises(
        ParseError, match=r"^t\.py:5:1: cannot migrate: its indentation mixes spaces and tabs in one line.*re-indent"
    ):
        migrate_source(source, "stochastic", "t.py")


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_form_feed_line_after_an_old_mac_line_end_stays_a_line(mode):
    """Found by the property tests: ``"xm\\r"`` then a line holding only ``"\\f\\n"``. Cut to
    ``"\\n"``, that line joined the ``"\\r"`` before it into one CRLF line end, the lines no
    longer paired one for one, and the untouched lines were put back at the wrong places (a
    closing bracket lost: the output did not compile)."""
    source = (
        "import os\r\n"
        "import torch\r"
        "\x0c\n"
        "from torch.utils.data import (\r\n"
        "    DataLoader,\r\n"
        ")\r\n"
        'os.environ["XLA_USE_BF16"] = "1"\r\n'
        "model = torch.nn.Linear(4, 3)\r\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\r\n"
        "for x, y in DataLoader([], batch_size=2):\r\n"
        "    loss = (model(x) - y).pow(2).mean()\r\n"
        "    loss.backward()\r\n"
    )
    result = migrate_source(source, mode, "mac.py")
    compile(result.code, "mac.py", "exec")
    assert "import torch\r\x0c\nfrom torch.utils.data import (\r\n    DataLoader,\r\n)\r\n" in result.code
    assert migrate_source(result.code, mode, "mac.py").code == result.code


FOOTERS = ["\n \n", "\n\t\n", "\n  ", "\n \n# end\n\n \n", "\n\n \n\n \n"]


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("footer", FOOTERS, ids=repr)
def test_blank_lines_before_a_line_of_spaces_at_the_end_are_kept(mode, footer):
    """Found by the property tests: libcst drops the blank lines of a module's footer that a
    line of only spaces or tabs follows ("x = 1\\n\\n \\n" renders as "x = 1\\n \\n"), so a
    file whose migration changes nothing came out changed, and a migrated one lost lines."""
    plain = FF_REPRO.replace("\x0c", "")
    assert plain.endswith("\n")
    result = migrate_source(plain + footer, mode, "footer.py")
    assert result.code == migrate_source(plain, mode, "footer.py").code + footer
    untouched = "x = 1\n" + footer
    assert migrate_source(untouched, mode, "x.py").code == untouched
    for newline in ("\r\n", "\r"):
        crlf = untouched.replace("\n", newline)
        assert migrate_source(crlf, mode, "x.py").code == crlf


@pytest.mark.parametrize(
    "source, error",
    [
        ("import os\nreturn 1\n", "t.py:2:1: not valid Python: 'return' outside function"),
        ("def f():\n    nonlocal x\n", "t.py:2:5: not valid Python: no binding for nonlocal 'x' found"),
        ("x = [i for i in range(3)]\nyield x\n", "t.py:2:1: not valid Python: 'yield' outside function"),
    ],
)
def test_what_cpython_does_not_compile_is_a_parse_error(source, error):
    """Found by the property tests: ``ast.parse`` accepts code the compiler rejects (a
    ``return`` outside a function), which was migrated into output that did not compile
    either. CPython's compile judges now: the file is that file's error, nothing written."""
    with pytest.raises(ParseError) as exc:
        migrate_source(source, "stochastic", "t.py")
    assert str(exc.value) == error


def test_top_level_await_is_python_in_a_notebook_cell():
    source = 'import os\nos.environ["XLA_USE_BF16"] = "1"\nawait asyncio.sleep(0)\n'
    result = migrate_source(source, "stochastic", "nb.py")  # parsed and analysed, no ParseError
    assert result.code == source and [d.code for d in result.diagnostics] == ["BFM010"]  # no model: the switch stays
