"""Scripts that hand the host values from the device (fixtures/host_edge/, our own writing):

* ``numpy_eval``: validation probabilities collected with ``.cpu().numpy()``, accuracy, log-loss
  and AUC in NumPy, the validation loss averaged with ``xm.mesh_reduce``;
* ``checkpoint_export``: ``xm.save(model.state_dict(), ...)``, read back by the sibling job
  ``export.py`` into a float32 ``.npz``;
* ``predictions_npy``: predictions and row ids written with ``np.save`` after ``.to(torch.device("cpu"))``
  and ``.cpu()``;
* ``histogram_logger``: a module of the tree (``stats_logger.py``) that makes NumPy histograms of
  every parameter and gradient, the script launched by ``run.sh``;
* ``scores_tolist``: scores and top candidates leaving the device with ``.tolist()``.

Goldens per mode (every changed file and the findings), idempotence, re-parse, and what each case
is about. That the migrated scripts run to their end with the legacy run's host outputs:
tests/test_run_to_end.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bf16_migrate.project import migrate_paths
from bf16_migrate.rules import mode_named

from conftest import FIXTURES, MODES

HOST_EDGE = FIXTURES / "host_edge"
CASES = sorted(p.name for p in HOST_EDGE.iterdir() if (p / "train.py").is_file())


def _copy(case: str, where: Path) -> Path:
    target = where / case
    shutil.copytree(HOST_EDGE / case, target, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    return target


def _files(tree: Path) -> dict[str, str]:
    return {str(p.relative_to(tree)): p.read_text() for p in sorted(tree.rglob("*")) if p.is_file()}


def _run(where: Path, name: str, mode: str):
    old = os.getcwd()
    os.chdir(where)
    try:
        return migrate_paths([Path(name)], mode, write=True)
    finally:
        os.chdir(old)


def migrate_case(where: Path, case: str, mode: str):
    """The case migrated in ``where``: the changed files' texts, the finding lines, the outcome."""
    tree = _copy(case, where)
    before = _files(tree)
    outcome = _run(where, case, mode)
    assert not outcome.errors, outcome.errors
    changed = {rel: text for rel, text in _files(tree).items() if before.get(rel) != text}
    return changed, [d.format_text() for d in outcome.diagnostics], outcome


def test_there_are_five_cases():
    assert CASES == ["checkpoint_export", "histogram_logger", "numpy_eval", "predictions_npy", "scores_tolist"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_golden_files_and_diagnostics(case, mode, goldens, tmp_path):
    changed, diagnostics, _ = migrate_case(tmp_path, case, mode)
    goldens.check(HOST_EDGE / case / "expected" / mode, changed, "".join(line + "\n" for line in diagnostics))
    for rel, text in changed.items():
        if rel.endswith(".py"):
            compile(text, rel, "exec")
    # nothing is left to do but the docstrings that name the variable
    left = [line for line in diagnostics if not line.endswith("[fixed]")]
    assert all(" BFM091 " in line for line in left), left


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case, mode, tmp_path):
    tree = _copy(case, tmp_path)
    _run(tmp_path, case, mode)
    after = _files(tree)
    again = _run(tmp_path, case, mode)
    assert _files(tree) == after
    assert not again.errors and not [d for d in again.diagnostics if d.fixed]


def _golden(case: str, mode: str, rel: str = "train.py") -> str:
    return (HOST_EDGE / case / "expected" / mode / rel).read_text()


@pytest.mark.parametrize("mode", MODES)
def test_numpy_evaluation_gets_float32_probabilities_and_keeps_integer_labels(mode):
    text = _golden("numpy_eval", mode)
    assert "probs.append(torch.softmax(logits, dim=-1).cpu().float().numpy())" in text
    assert "targets.append(y.cpu().numpy())" in text  # int64 labels keep their dtype
    assert 'xm.mesh_reduce("val_loss", host_float32(total_loss / len(features)),' in text


@pytest.mark.parametrize("mode", MODES)
def test_a_checkpoint_is_saved_as_the_legacy_run_saved_it(mode):
    text = _golden("checkpoint_export", mode)
    if mode_named(mode).casts_model:
        assert "xm.save(host_float32(model.state_dict()), checkpoint)" in text
    else:  # amp: the model stays FP32, its state dict leaves as float32
        assert "xm.save(model.state_dict(), checkpoint)" in text and "host_float32" not in text
    # the export job is another script, not run under the switch: it is not touched
    assert not (HOST_EDGE / "checkpoint_export" / "expected" / mode / "export.py").exists()


@pytest.mark.parametrize("mode", MODES)
def test_predictions_leave_through_the_run_time_cast(mode):
    text = _golden("predictions_npy", mode)
    assert 'host_float32(predictions.to(torch.device("cpu"))).numpy()' in text
    assert "host_float32(row_ids.cpu()).numpy()" in text  # unknown dtype: the helper keeps int64


@pytest.mark.parametrize("mode", MODES)
def test_the_logger_module_of_the_tree_is_migrated_with_its_script(mode):
    text = _golden("histogram_logger", mode, "stats_logger.py")
    assert "values = host_float32(tensor.detach().cpu()).numpy().ravel()" in text
    assert "\nimport torch\n" in text and "def host_float32(data, back_to_device=False):" in text


@pytest.mark.parametrize("mode", MODES)
def test_tolist_needs_nothing(mode):
    golden = HOST_EDGE / "scores_tolist" / "expected" / mode
    text = (golden / "train.py").read_text()
    assert "zip(queries.tolist(), scores.tolist(), top.cpu().tolist())" in text
    assert "host_float32" not in text and "BFM160" not in (golden / "diagnostics.txt").read_text()
