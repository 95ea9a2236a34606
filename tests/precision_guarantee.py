"""The guarantee the rewrite gives the user who reads "0 left to do by hand": the migrated step graph
runs no matmul in f32 that the legacy run had in bf16. Checked on ``verify --json`` documents by the
end-to-end tests of every fixture (tests/test_verify_fixtures.py, tests/test_real_shapes.py,
tests/test_model_code.py). Where the model is cast, no softmax either (the loss fixtures of
tests/test_model_code.py: a softmax left in f32 keeps every matmul bf16).

"Nothing left to do" is read as the CLI prints it, with documentation set aside: the fixtures'
docstrings name the legacy variable on purpose (BFM091, which a user may ``--ignore``), and a
migration whose only unfixed finding is documentation prints "0 left to do by hand" under
``--ignore BFM091``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bf16_migrate.rules import RULES_DIR, mode_named

DOCUMENTATION = {"BFM091"}
"""Findings about text, not code: they never change what the migrated script computes."""

AUDIT_EMIT = "model-code-dtypes"


def left_to_do(data: dict) -> list[str]:
    """The codes of the migration's unfixed findings, documentation set aside."""
    return [d["code"] for d in data["diagnostics"] if not d["fixed"] and d["code"] not in DOCUMENTATION]


def assert_no_silent_f32_matmul(data: dict) -> None:
    """When the migration behind a ``verify --json`` document left nothing to do (but
    documentation), its step graph has no more matmuls with an f32 operand than the legacy run's
    (the comparison run's, when the legacy run could not be made)."""
    if left_to_do(data):
        return
    runs = data["runs"]
    migrated = runs["migrated"]["graph"]
    base = runs["legacy"] if runs.get("legacy") and runs["legacy"].get("graph") else runs["reference"]
    allowed = base["graph"]["f32_matmuls"] if base is runs.get("legacy") else 0
    assert migrated["f32_matmuls"] <= allowed, (
        f"'0 left to do by hand' but {migrated['f32_matmuls']} of {migrated['matmuls']} matmuls of the migrated "
        f"step graph have an f32 operand, where the legacy run had {allowed}"
    )


def assert_no_silent_f32_softmax(data: dict) -> None:
    """When the migration behind a ``verify --json`` document left nothing to do (but documentation)
    and casts the model (``Mode.casts_model``; amp's autocast runs softmax in f32 by design), its step
    graph computes no more exponentials in f32 (a softmax, a log-softmax, a cross-entropy, forward
    or backward: ``GraphStats.exponentials``) than the legacy run's: a mask a loss made without a
    dtype and subtracted from the bf16 logits promotes them, and the softmax after it runs in f32
    while every matmul stays bf16 (the NT-Xent of bench/unseen/simclr_launcher)."""
    if left_to_do(data) or not mode_named(data["mode"]).casts_model:
        return
    migrated = data["runs"]["migrated"]["graph"].get("exponentials", {}).get("f32", 0)
    legacy = data["runs"]["legacy"]["graph"].get("exponentials", {}).get("f32", 0)
    assert migrated <= legacy, (
        f"'0 left to do by hand' but the migrated step graph computes {migrated} exponentials in f32 "
        f"(softmax, cross-entropy), where the legacy run had {legacy}"
    )


def audit_off_rules(where: Path, also: tuple[str, ...] = ()) -> Path:
    """A copy of the rules without the model-code audit in any mode (what main did before it), and
    without the emitted changes ``also`` names: for the negative controls, through
    ``BF16_MIGRATE_RULES_DIR``."""
    target = where / "rules-without-audit"
    shutil.copytree(RULES_DIR, target)
    modes = target / "modes.toml"
    text = modes.read_text()
    for emit in (AUDIT_EMIT, *also):
        text = text.replace(f'"{emit}",', "")
        assert f'"{emit}"' not in text, emit
    modes.write_text(text)
    return target
