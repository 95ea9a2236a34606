"""A file that names a legacy variable ends the run rewritten or reported, never passed over in
silence, also when it holds a byte that is not UTF-8 or names the variable only in a comment.

The inputs are tests/data/undecodable_carriers/ (bytes, not under fixtures/: a file there would
re-roll the junk trees of tests/test_junk_inputs.py), each copied beside a train.py that names no
variable:

* a shell script naming the variable only in a comment, beside a byte that is not UTF-8 (the
  junk tree's ``.slurm`` whose ``# exp\\xffort XLA_USE_BF16=1`` nothing reported): BFM094, one
  line naming the file, the mention and the byte's line and offset; ``--check`` fails;
* the same script in valid UTF-8 (and a Python comment): no finding (comments set nothing), exit
  0, and the summary names the file as holding nothing to change;
* a shell script or Dockerfile setting the variable beside such a byte: rewritten, the byte kept;
* a Dockerfile comment beside such a byte: BFM131 (the Dockerfile carrier's own report);
* a YAML file with such a byte: an error naming the file and line (a YAML stream is Unicode).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.mentions import first_bad_byte

from conftest import ROOT

DATA = ROOT / "tests" / "data" / "undecodable_carriers"


def tree(tmp_path: Path, *names: str) -> Path:
    """``names`` from the data directory, with its train.py, in a fresh directory."""
    root = tmp_path / "job"
    root.mkdir()
    for name in ("train.py", *names):
        shutil.copyfile(DATA / name, root / name)
    return root


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


@pytest.mark.parametrize("flag", ["--check", "--diff"])
def test_a_comment_beside_a_byte_not_utf8_is_reported_with_the_byte(tmp_path, flag):
    root = tree(tmp_path, "comment_only.slurm")
    before = snapshot(root)
    result = invoke(root, "--mode", "stochastic", flag)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if " BFM" in line and line.startswith(str(root))]
    assert lines == [
        f"{root / 'comment_only.slurm'}:3:11: BFM094 XLA_USE_BF16 is named only where nothing is set (a comment), "
        "in a file holding a byte that is not UTF-8 (0xFF at line 3, byte offset 30): nothing changed; "
        "check that line by hand"
    ]
    assert "1 left to do by hand (1 file(s) name a legacy variable)" in result.output
    assert snapshot(root) == before


def test_the_finding_is_in_the_json_output_and_noqa_keeps_the_file(tmp_path):
    root = tree(tmp_path, "comment_only.slurm")
    result = invoke(root, "--mode", "stochastic", "--check", "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["errors"] == []
    assert [(d["code"], Path(d["path"]).name, d["line"], d["fixed"]) for d in doc["diagnostics"]] == [
        ("BFM094", "comment_only.slurm", 3, False)
    ]
    script = root / "comment_only.slurm"
    script.write_bytes(script.read_bytes().replace(b"=1\n", b"=1  # noqa: BFM094\n"))
    result = invoke(root, "--mode", "stochastic", "--check")
    assert result.exit_code == 0, result.output
    assert "BFM094" not in result.output


def test_a_utf8_comment_holds_nothing_to_change(tmp_path):
    root = tree(tmp_path, "comment_only_utf8.sh", "notes_only.py")
    before = snapshot(root)
    result = invoke(root, "--mode", "stochastic", "--check")
    assert result.exit_code == 0, result.output
    assert "BFM" not in result.output
    assert (
        f"(2 file(s) name a legacy variable; 2 only in comments, nothing to change: "
        f"{root / 'comment_only_utf8.sh'}:2, {root / 'notes_only.py'}:3)" in " ".join(result.output.split())
    )
    assert snapshot(root) == before


def test_a_setting_beside_a_byte_not_utf8_is_rewritten_keeping_the_byte(tmp_path):
    root = tree(tmp_path, "setting.sh", "Dockerfile.setting")
    result = invoke(root, "--mode", "stochastic")
    assert result.exit_code == 0, result.output
    assert "BFM094" not in result.output
    assert (root / "setting.sh").read_bytes() == (
        b"#!/bin/bash\n# caf\xe9 au lait\nexport NEURON_RT_STOCHASTIC_ROUNDING_EN=1\npython train.py\n"
    )
    assert (root / "Dockerfile.setting").read_bytes() == (
        b"FROM python:3.11\n# caf\xe9\nENV NEURON_RT_STOCHASTIC_ROUNDING_EN=1\nCMD python train.py\n"
    )
    assert "model.to(torch.bfloat16)" in (root / "train.py").read_text()


def test_a_dockerfile_comment_beside_a_byte_not_utf8_is_its_own_finding(tmp_path):
    root = tree(tmp_path, "Dockerfile.comment")
    before = snapshot(root)
    result = invoke(root, "--mode", "stochastic", "--check", "--format", "json")
    assert result.exit_code == 1, result.output
    found = [(d["code"], Path(d["path"]).name, d["line"]) for d in json.loads(result.stdout)["diagnostics"]]
    assert found == [("BFM131", "Dockerfile.comment", 3)]
    assert snapshot(root) == before


def test_a_yaml_file_with_a_byte_not_utf8_is_an_error_naming_it(tmp_path):
    root = tree(tmp_path, "comment.yaml")
    before = snapshot(root)
    result = invoke(root, "--mode", "stochastic", "--check")
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {root / 'comment.yaml'}:1:6: not valid YAML: a byte that is not UTF-8 (YAML streams are Unicode)"
    ]
    assert snapshot(root) == before


@pytest.mark.parametrize(
    "data, bad",
    [
        (b"#!/bin/bash\n# exp\xffort X=1\n", (17, 2, 0xFF)),
        (b"\xe9", (0, 1, 0xE9)),
        (b"ok \xe2\x82\n", (3, 1, 0xE2)),  # a cut multi-byte character: its first byte
        ("caf\u00e9\n".encode(), None),
        (b"\xef\xbb\xbfplain\n", None),
    ],
    ids=["latin-in-comment", "first-byte", "truncated", "utf8", "bom"],
)
def test_first_bad_byte(data, bad):
    assert first_bad_byte(data) == bad
