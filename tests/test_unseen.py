"""verify's account of the migration's changes the traced migrated run never executed (bf16_migrate/verify/unseen.py):
a change on a path the run did not take (a phase after a long warm-up, an evaluation every N steps) was verified by
nothing, and the trace part and the verdict's notes say which lines (a hunt's wrong text in such a phase PASSed with
nothing said)."""

from __future__ import annotations

import textwrap

from bf16_migrate.rule_files import mode_named
from bf16_migrate.verify import records, trace_check
from bf16_migrate.verify.check import CheckInput
from bf16_migrate.verify.compare import Verdict
from bf16_migrate.verify.parts import INCONCLUSIVE, PASS, Part
from bf16_migrate.verify.trace import Trace, TraceEnd
from bf16_migrate.verify.unseen import unseen_changes, unseen_note

LEGACY = textwrap.dedent(
    """\
    import os
    import torch
    os.environ["XLA_USE_BF16"] = "1"


    def contrastive(za, zb):
        sim = za @ zb.T
        return sim.logsumexp(1).mean()


    def train(model, opt, batches, warmup):
        for step, (xa, xb) in enumerate(batches):
            za, zb = model(xa), model(xb)
            if step < warmup:
                loss = (za - zb).pow(2).mean()
            else:
                eye = torch.eye(za.shape[0], device=za.device)
                loss = contrastive(za, zb) + eye.sum()
            loss.backward()
            opt.step()
    """
)


def _migrated() -> str:
    text = LEGACY.replace('os.environ["XLA_USE_BF16"] = "1"\n', "")
    text = text.replace(
        "device=za.device)", "device=za.device, dtype=za.dtype)"
    )  # a change in the branch after the warm-up
    text = text.replace("    sim = za @ zb.T\n", "    sim = za.float() @ zb.float().T\n")
    return text.replace(
        "        za, zb = model(xa), model(xb)\n",
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n            za, zb = model(xa), model(xb)\n',
    )


def _line(text: str, start: str) -> int:
    return next(k for k, row in enumerate(text.splitlines(), 1) if row.strip().startswith(start))


def test_changes_in_a_branch_and_a_function_the_run_never_entered_are_named():
    """The run went through the warm-up branch only (its lines reached torch): the changed ``torch.eye`` of the
    other branch and the changed line of ``contrastive``, which nothing called, are unseen; the ``with
    torch.autocast`` header, whose body ran, and the removed switch (no statement left) are not."""
    migrated = _migrated()
    ran = {_line(migrated, "za, zb = model"), _line(migrated, "loss = (za - zb)"), _line(migrated, "loss.backward")}
    trace = Trace(lines_run={"/u/train.py": frozenset(ran)})
    unseen = unseen_changes(trace, [("/u/train.py", LEGACY, migrated)])
    assert [(u.line, u.code) for u in unseen] == [
        (_line(migrated, "sim = za.float()"), "sim = za.float() @ zb.float().T"),
        (_line(migrated, "eye = torch.eye"), "eye = torch.eye(za.shape[0], device=za.device, dtype=za.dtype)"),
    ]
    note = unseen_note(unseen, TraceEnd.BUDGET)
    assert note.startswith("2 of the migration's changes never ran in the traced migrated run, after the trace")
    assert f"train.py:{_line(migrated, 'eye = torch.eye')}" in note and "--trace-time" in note
    # the run took the contrastive branch too: nothing is unseen
    ran |= {_line(migrated, "sim = za.float()"), _line(migrated, "loss = contrastive")}
    assert unseen_changes(Trace(lines_run={"/u/train.py": frozenset(ran)}), [("/u/train.py", LEGACY, migrated)]) == []


def test_a_file_the_run_never_reached_counts_its_changed_calls_and_the_codemods_helpers_do_not():
    """A module no traced frame was in: each changed statement that calls something and names a precision (torch, a
    cast, a dtype) is unseen; the helpers the codemod writes (their docstring's mark) are its own code, whose
    branches a run need not take."""
    helper = (
        "\n\ndef host_float32(t):\n"
        '    """Added by bf16-migrate (replacing the legacy bf16 environment switch): f32 to the host."""\n'
        "    return t.float()\n"
    )
    # a changed statement that names no precision (an option's arithmetic) is none the trace could have judged
    every = "def train(model, opt, batches, warmup):\n    every = max(1, len(batches) // 10)\n"
    migrated = _migrated().replace("def train(model, opt, batches, warmup):\n", every) + helper
    unseen = unseen_changes(Trace(), [("/u/train.py", LEGACY, migrated)])
    assert [u.code for u in unseen] == [
        "sim = za.float() @ zb.float().T",
        'with torch.autocast("xla", dtype=torch.bfloat16):',
        "eye = torch.eye(za.shape[0], device=za.device, dtype=za.dtype)",
    ]
    # a hook the codemod writes says so in its own words ("added by bf16-migrate"): its body reaches torch only when
    # there is something to cast (a hunt's float32_inputs_hook was named though it ran at every forward)
    hook = (
        "\n\ndef float32_inputs_hook(module, args, kwargs):\n"
        '    """Forward pre-hook added by bf16-migrate: the model\'s float64 inputs become float32."""\n'
        "    return float64_to_float32(args), float64_to_float32(kwargs)\n"
    )
    assert [u.code for u in unseen_changes(Trace(), [("/u/train.py", LEGACY, migrated + hook)])] == [
        u.code for u in unseen
    ]
    assert "before the run ended on an exception" in unseen_note(unseen, TraceEnd.EXCEPTION)
    assert unseen_changes(Trace(), [("/u/train.py", LEGACY, LEGACY)]) == []
    assert unseen_changes(Trace(), [("/u/train.py", LEGACY, "def broken(:\n")]) == []


def test_the_trace_part_is_inconclusive_when_its_time_ran_out_before_a_change():
    """The trace part names the unseen changes; a PASS becomes INCONCLUSIVE when the trace's time ran out before
    them (nothing proved them: ``--revert-failed`` puts them back), stays PASS with the note when the script ended
    without them (a path these arguments do not take) or the trace stopped at the recorded steps on request."""
    migrated = _migrated()
    unseen = unseen_changes(Trace(), [("/u/train.py", LEGACY, migrated)])
    for end, status in [
        (TraceEnd.BUDGET, INCONCLUSIVE),
        (TraceEnd.DEADLINE, INCONCLUSIVE),
        (TraceEnd.SCRIPT_EXIT, PASS),
        (TraceEnd.STEPS_REACHED, PASS),
    ]:
        trace = Trace(end=end, calls=10, lines_run={"/u/train.py": frozenset({1})})
        runs = {
            records.MIGRATED: records.RunRecord(records.MIGRATED, losses=[1.0, 0.9], trace=trace),
            records.LEGACY: records.RunRecord(records.LEGACY, losses=[1.0, 0.9], trace=Trace()),
        }
        verdict = Verdict(mode_named("stochastic"), [Part("runs", PASS, "")])
        part = trace_check.check(CheckInput(verdict, runs, (), unseen=unseen))
        assert part is not None and part.status == status, (end, part)
        assert "3 of the migration's changes never ran" in part.detail
        assert part.figures["unseen"][0] == f"/u/train.py:{_line(migrated, 'sim = za.float()')}"
        assert any("the verdict says nothing about them" in n for n in verdict.notes)
