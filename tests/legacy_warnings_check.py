"""A verify check made by docs/verify.md's recipe ("A check of your own"), for
tests/test_verify_check_recipe.py: the verdict's ``legacy_warnings`` part says whether the
migrated run's output still holds torch-xla's warning that a legacy variable is deprecated
(torch-xla 2.9, torch_xla/__init__.py, ``_check_deprecated_env_var``: "The environment variable
'XLA_USE_FP16' is deprecated Please update your code to avoid using it."). In the package it
would be bf16_migrate/verify/legacy_warnings.py; the test registers it from here."""

from __future__ import annotations

from bf16_migrate.verify.check import CheckInput
from bf16_migrate.verify.parts import FAIL, PASS, Part
from bf16_migrate.verify.records import MIGRATED
from bf16_migrate.verify.runner import LEGACY_VARIABLES

NAME = "legacy_warnings"


def warnings_in(lines: list[str]) -> list[str]:
    """The lines of a run's output (``RunRecord.tail``) that are torch-xla's warning that a
    legacy variable (``rules/XLA_*.toml``) is deprecated."""
    return [line for line in lines if "is deprecated" in line and any(f"'{name}'" in line for name in LEGACY_VARIABLES)]


def check(given: CheckInput) -> Part | None:
    """FAIL when the migrated run's output warns that a legacy variable is deprecated (the
    migration left it in force), PASS when it does not; None without a migrated run."""
    migrated = given.runs.get(MIGRATED)
    if migrated is None:
        return None
    said = warnings_in(migrated.tail)
    if said:
        detail = f"the migrated run's output warns of a legacy variable ({len(said)} line(s)): {said[0].strip()}"
        return Part(NAME, FAIL, detail, {"warnings": len(said)})
    detail = f"no deprecation warning of a legacy variable in the migrated run's last {len(migrated.tail)} output lines"
    return Part(NAME, PASS, detail, {"warnings": 0})
