"""docs/architecture.md's recipe for a carrier, followed: a made-up kind, ``vars`` (files named
``*.vars`` holding ``NAME=VALUE`` lines that a shell launcher loads), registered the way the
recipe says and nowhere else (the carrier module: the ``.env`` carrier's, as the made-up variable
of tests/test_rules_source.py copies XLA_USE_BF16's rule; ``carriers.REGISTRY``;
``scan.CARRIER_FILES``; ``carriers.HASH_COMMENTS`` for its ``#`` comments). The new kind's files
are found, planned with the script their launcher starts, and read for ``# noqa``, as a
``.env`` file is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf16_migrate import carriers, scan
from bf16_migrate.cli import main

from conftest import FIXTURES

TRAIN = (FIXTURES / "project" / "src" / "train.py").read_text()


@pytest.fixture
def vars_kind(monkeypatch):
    """The recipe's registrations (``hash_comments=False`` leaves the last one out)."""

    def register(hash_comments: bool = True) -> None:
        monkeypatch.setitem(carriers.REGISTRY, "vars", "dotenv")  # the module satisfying the Carrier protocol
        monkeypatch.setitem(scan.CARRIER_FILES, "vars", scan.FileNames(suffixes=frozenset({".vars"})))
        if hash_comments:
            monkeypatch.setattr(carriers, "HASH_COMMENTS", carriers.HASH_COMMENTS | {"vars"})

    return register


def _tree(where: Path, line: str) -> Path:
    (where / "src").mkdir(parents=True)
    (where / "src" / "train.py").write_text(TRAIN)
    (where / "job.vars").write_text(f"# the job's settings\n{line}\n")
    (where / "run.sh").write_text("#!/bin/bash\nset -a\n. ./job.vars\nset +a\npython src/train.py --steps 20\n")
    return where


def _check(tree: Path):
    old = os.getcwd()
    os.chdir(tree)
    try:
        return CliRunner().invoke(main, [".", "--check", "--output-format", "text"])
    finally:
        os.chdir(old)


def test_a_carrier_registered_by_the_recipe_is_found_and_planned(vars_kind, tmp_path):
    vars_kind()
    assert scan.kind_of(Path("job.vars")) == "vars"
    result = _check(_tree(tmp_path / "t", "XLA_USE_BF16=1"))
    assert result.exit_code == 1, result.output
    assert "job.vars:2:1: BFM001 would replace XLA_USE_BF16 by NEURON_RT_STOCHASTIC_ROUNDING_EN=1" in result.output
    assert "src/train.py:1:1: BFM001" in result.output  # the script it reaches gets the change with it


@pytest.mark.parametrize("registered", [True, False])
def test_a_noqa_in_the_new_kind_is_read_when_its_comments_are_registered(vars_kind, tmp_path, registered):
    vars_kind(hash_comments=registered)
    result = _check(_tree(tmp_path / "t", "XLA_USE_BF16=1  # noqa: BFM001"))
    assert ("job.vars:2:1: BFM001" not in result.output) is registered, result.output
    assert ("left as it is: job.vars" in result.output) is registered, result.output


def test_without_the_registration_the_files_are_not_a_carrier(tmp_path):
    assert scan.kind_of(Path("job.vars")) is None
