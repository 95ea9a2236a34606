"""The migration's outcome is a value (python/outcome.py): the launcher plan, the project and
verify act on ``MigrationResult.outcome``, never on the diagnostics' codes. Each refusal is
recorded where the planner decides, with the finding that words it."""

from __future__ import annotations

import pytest

from bf16_migrate.python import LAUNCH_REFUSALS, SCRIPT_REFUSALS, Refusal, migrate_source

from conftest import FIXTURES

TRAIN = (FIXTURES / "mlp_regression" / "train.py").read_text()

NO_OPTIMIZER = 'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nx = torch.ones(2, device="xla")\n'


def test_a_migrated_script_took_the_change():
    result = migrate_source(TRAIN, "stochastic", "train.py")
    assert result.outcome.took and result.outcome.switch_migrated and not result.outcome.refusals


def test_no_optimizer_is_a_refusal_worded_by_its_finding():
    result = migrate_source(NO_OPTIMIZER, "stochastic", "probe.py")
    assert not result.outcome.took
    [(why, finding)] = result.outcome.refusals
    assert why is Refusal.NO_OPTIMIZER and why in LAUNCH_REFUSALS and why in SCRIPT_REFUSALS
    assert finding in result.diagnostics and not finding.fixed  # the very finding the user sees


def test_a_launcher_setting_on_an_already_migrated_script_took_it():
    migrated = migrate_source(TRAIN, "stochastic", "train.py").code
    again = migrate_source(migrated, "stochastic", "train.py", launched_with={"XLA_USE_BF16": "1"})
    assert again.outcome.already_migrated and again.outcome.took and not again.outcome.switch_migrated


def test_another_modes_change_is_an_own_precision_refusal():
    migrated = migrate_source(TRAIN, "stochastic", "train.py").code
    other = migrate_source(migrated, "amp", "train.py", launched_with={"XLA_USE_BF16": "1"})
    assert not other.outcome.took
    assert [why for why, _ in other.outcome.refusals] == [Refusal.OWN_PRECISION]
    assert not other.outcome.refused(LAUNCH_REFUSALS)


@pytest.mark.parametrize("name", ["test_env.py"])
def test_a_test_file_is_refused_as_a_test(name):
    result = migrate_source(
        'import os\nos.environ["XLA_USE_BF16"] = "1"\n\ndef test_it():\n    assert True\n', "stochastic", name
    )
    assert {why for why, _ in result.outcome.refusals} == {Refusal.TEST}
    assert result.outcome.refused(SCRIPT_REFUSALS) and not result.outcome.refused(LAUNCH_REFUSALS)


def test_refusals_come_in_the_order_of_their_findings():
    """A test file reads the variable (line 3) before it sets it (line 6); the planner decides on
    the write first, but the refusals follow the findings' order (the first is the one a
    launcher's message quotes)."""
    source = (
        "import os\n\n"
        'EXPECT_BF16 = os.environ.get("XLA_USE_BF16") == "1"\n\n\n'
        'def test_bf16():\n    os.environ["XLA_USE_BF16"] = "1"\n'
    )
    result = migrate_source(source, "stochastic", "test_bf16.py")
    places = [d.line for _, d in result.outcome.refusals]
    assert places == [3, 7], result.diagnostics
    assert [d for _, d in result.outcome.refusals] == [d for d in result.diagnostics if d.code == "BFM052"]
