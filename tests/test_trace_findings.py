"""verify's dtype trace read into findings, without XLA: records as the child writes them
(bf16_migrate/verify/_child/dtype_trace.py), read against the legacy run's, placed in the user's
original file and line (not the migrated copy's), grouped by chain, excused by a deliberate f32
island the migration reported, and judged (the trace part). Then the report in every output
verify has, `--trace FILE` through the rewrite, and the bound of verify --fix's loop."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from bf16_migrate.diagnostics import Diagnostic
from bf16_migrate.repairs import RepairKind
from bf16_migrate.rule_files import mode_named
from bf16_migrate.verify import RunError, _raise_unusable
from bf16_migrate.verify.parts import FAIL, PASS
from bf16_migrate.verify.records import AUTOCAST, LEGACY, MIGRATED, REFERENCE, RunRecord
from bf16_migrate.verify.trace import Kind, Trace, TraceEnd
from bf16_migrate.verify.trace_findings import (
    FindingKind,
    LineMap,
    TraceSources,
    island_spans,
    same_lines,
    trace_findings,
    trace_part,
)

LEGACY_TEXT = textwrap.dedent(
    """\
    import copy
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch

    def forward(h):
        pos = torch.arange(16, device=h.device).float()
        return h + pos

    model = Net().to(dev)
    ema = copy.deepcopy(model)
    out = model(x)
    preds = out.cpu()
    arr = preds.numpy()
    """
)
MIGRATED_TEXT = textwrap.dedent(
    """\
    import copy
    import os
    os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"
    import torch

    def forward(h):
        pos = torch.arange(16, device=h.device).float()
        return h + pos

    model = Net().to(dev)
    ema = copy.deepcopy(model)
    model.to(torch.bfloat16)
    out = model(x.to(torch.bfloat16))
    preds = out.cpu()
    arr = preds.numpy()
    """
)


def ev(kind, line, op, **more):
    data = {"kind": kind, "file": "/u/train.py", "line": line, "op": op, "order": more.pop("order", line)}
    text = MIGRATED_TEXT.splitlines()[line - 1]
    expr = more.pop("expr", None)
    if expr is not None:
        data["col"] = text.index(expr)
        data["end_col"] = data["col"] + len(expr)
        data["end_line"] = line
    data.update(more)
    return data


def record(events, end="script_exit", continued=True, device_ops=False):
    return {
        "events": events,
        "end": end,
        "continued": continued,
        "stop_step": 3,
        "errors": [],
        "calls": 1234,
        "device_ops": device_ops,
    }


def runs(migrated_events, legacy_events=(), **kw):
    return {
        MIGRATED: RunRecord(MIGRATED, losses=[1.0, 0.9, 0.8], trace=Trace.from_json(record(migrated_events, **kw))),
        LEGACY: RunRecord(LEGACY, losses=[1.0, 0.9, 0.8], trace=Trace.from_json(record(list(legacy_events)))),
    }


def sources(islands=None):
    texts = {"/u/train.py": LEGACY_TEXT}
    return TraceSources(texts.get, {MIGRATED: {"/u/train.py": MIGRATED_TEXT}}, islands=islands or {}, f32=True)


MEET_CHAIN = [
    ev("create", 7, "Tensor.float", expr="torch.arange(16, device=h.device).float()", operands=["s64"], result="f32"),
    ev(
        "meet",
        8,
        "Tensor.add",
        expr="h + pos",
        operands=["bf16", "f32"],
        result="f32",
        origin={"kind": "create", "file": "/u/train.py", "line": 7, "op": "Tensor.float"},
        f32_names=["pos"],
        partner_names=["h"],
        f32_args=[1],
    ),
    # downstream of the first meet: the same chain, not a finding of its own
    ev(
        "meet",
        13,
        "F.linear",
        expr="model(x.to(torch.bfloat16))",
        operands=["f32", "bf16"],
        result="f32",
        origin={"kind": "meet", "file": "/u/train.py", "line": 8, "op": "Tensor.add"},
        f32_names=[],
    ),
]


def test_linemap_places_the_migrated_lines_in_the_original():
    mapping = LineMap(MIGRATED_TEXT, LEGACY_TEXT)
    assert mapping.place(8) == (8, True)  # untouched
    assert mapping.place(12) == (11, False)  # `model.to(torch.bfloat16)`: added after line 11
    assert mapping.place(13) == (12, False)  # the changed call line
    assert mapping.place(15) == (14, True)


def test_linemap_places_a_rewritten_block_on_the_lines_it_replaced():
    """An EMA update rewritten by hand over two lines of the user's (no line of it like theirs) is named at
    those lines, not at the line before them (bench/unseen/hunt25 MT4 was named at the loop's header)."""
    user = "for t, s in pairs:\n    t.mul_(d)\n    t.add_(s, alpha=1 - d)\nstep += 1\n"
    ran = "for t, s in pairs:\n    f = t.float() * d\n    t.copy_(f + s.float() * (1 - d))\nstep += 1\n"
    mapping = LineMap(ran, user)
    assert [mapping.place(n) for n in (1, 2, 3, 4)] == [(1, True), (2, False), (3, False), (4, True)]
    assert mapping.added == {2, 3}
    # lines inserted between the user's (no line replaced) are still at the line before them
    inserted = LineMap("a = 1\nb = compute(a).float()\nc = a\n", "a = 1\nc = a\n")
    assert inserted.place(2) == (1, False) and inserted.added == {2}


def test_a_meet_is_named_once_at_the_first_operation_of_its_chain_in_the_original_file():
    found = trace_findings(runs(MEET_CHAIN), sources())
    assert [(f.kind, f.diagnostic.code, f.diagnostic.line, f.diagnostic.col) for f in found] == [
        (FindingKind.MEET, "BFM200", 8, 12)
    ]
    d = found[0].diagnostic
    assert d.path == "/u/train.py" and not d.fixed
    assert "`h + pos`: f32 meets bf16 in `Tensor.add` (bf16, f32 -> f32)" in d.message
    assert "made f32 on the device at line 7 (`Tensor.float`)" in d.message
    assert any("train.py:12: meet `F.linear`" in line for line in found[0].evidence)  # the downstream one
    site = found[0].repair
    assert site is not None
    assert site.kind == RepairKind.CAST_OPERAND and site.names == ("pos",) and site.partner == "h"
    assert (site.span.line, site.span.col, site.span.anchor) == (8, 11, "    return h + pos")


def test_a_float64_operand_is_named_f64_not_f32():
    """NumPy data on the device (float64) meeting bf16: the finding says f64 (Neuron does not run it
    at all, where an f32 island only costs speed)."""
    chain = [
        dict(e, operands=["bf16", "f64"], result="f64") if e["op"] == "Tensor.add" else dict(e) for e in MEET_CHAIN
    ]
    (found,) = trace_findings(runs(chain), sources())
    message = found.diagnostic.message
    assert "`h + pos`: f64 meets bf16 in `Tensor.add` (bf16, f64 -> f64)" in message
    assert "compute in f64 where the legacy run had bf16; the f64 operand is" in message and " f32 " not in message


def test_amp_traces_float64_on_the_device_and_names_where_it_began():
    """amp traces float64 only (its model is f32 on purpose): a float64 parameter of a module moved to the
    device is named where the module was moved, a float64 tensor made on the device where it was made;
    each is a finding of its own with no repair (where it should become float32 is a choice)."""
    module = [
        ev("create", 10, "Net.to", expr="Net().to(dev)", operands=[], result="f64", module="Net"),
        ev(
            "meet",
            8,
            "Tensor.add",
            expr="h + pos",
            operands=["f32", "f64"],
            result="f64",
            origin={"kind": "module", "file": "/u/train.py", "line": 10, "op": "Net.to"},
            f32_names=["pos"],
            order=30,
        ),
    ]
    amp = replace(sources(), f32=False, f64=True)
    (found,) = trace_findings(runs(module), amp)
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.FLOAT64, "BFM204", 10)
    assert found.repair is None
    message = found.diagnostic.message
    assert "computes in float64 on the device" in message and "the f64 parameters of a module moved" in message
    assert any("f64 operand pos" in line for line in found.evidence), found.evidence
    origin = {"kind": "create", "file": "/u/train.py", "line": 7, "op": "torch.from_numpy"}
    made = [
        ev("create", 7, "torch.from_numpy", operands=[], result="f64"),
        ev("compute", 8, "Tensor.mul", expr="h + pos", operands=["f64", "f64"], result="f64", origin=origin),
    ]
    (found,) = trace_findings(runs(made), amp)
    assert (found.kind, found.diagnostic.line) == (FindingKind.FLOAT64, 8)
    assert "its f64 is made f64 on the device at line 7" in found.diagnostic.message
    # the same events where the legacy run had them too are none
    assert trace_findings(runs(made, made), amp) == []
    # a float64 tensor made on the device, held at the first step and computed with in nothing float64 (gathered,
    # then `.float()`ed: a hunt's schedule left float64 PASSed): named where it was made; one not held then (cast
    # at once to float32, as the codemod's float64_to_float32(torch.tensor(...)) does) is none
    (found,) = trace_findings(runs([dict(made[0], held=True)]), amp)
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.FLOAT64, "BFM204", 7)
    assert trace_findings(runs(made[:1]), amp) == []
    assert trace_findings(runs([dict(made[0], held=True)], made[:1]), amp) == []
    # a batch moved in as it is (`features.to(device)`): amp's input casts make it float32 at the model's door
    assert trace_findings(runs([dict(made[0], held=True, op="Tensor.to")]), amp) == []


def test_amp_names_bf16_made_by_hand_on_a_line_neither_script_nor_codemod_wrote():
    """amp keeps the model, its state and its targets float32: a bf16 EMA teacher made by hand
    (``copy.deepcopy(model).to(torch.bfloat16)``) PASSed, the legacy run being bf16 everywhere
    (bench/unseen/hunt25 MTA3). A cast the legacy script has on a line, or the codemod's migration
    wrote, is no finding; nor is anything in the codemod's own migration."""
    hand = LEGACY_TEXT.replace("ema = copy.deepcopy(model)", "ema = copy.deepcopy(model).to(torch.bfloat16)")
    line = hand.splitlines().index("ema = copy.deepcopy(model).to(torch.bfloat16)") + 1
    cast = [
        {
            "kind": "downcast",
            "file": "/u/train.py",
            "line": line,
            "op": "Tensor.to",
            "order": 5,
            "operands": ["f32"],
            "result": "bf16",
            "col": 6,
            "end_col": 46,
            "end_line": line,
        }
    ]
    amp = TraceSources(
        {"/u/train.py": hand}.get,
        {MIGRATED: {"/u/train.py": hand}, LEGACY: {"/u/train.py": LEGACY_TEXT}},
        f32=False,
        f64=True,
        own_migration=False,
    )
    (found,) = trace_findings(runs(cast), amp)
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.BF16_BY_HAND, "BFM205", line)
    assert "makes bf16 on the device by hand (`Tensor.to` of f32)" in found.diagnostic.message
    assert "copy.deepcopy(model).to(torch.bfloat16)" in found.diagnostic.message
    kept = {"/u/train.py": hand}
    # the same cast in the legacy script is the author's own: no finding
    assert trace_findings(runs(cast), replace(amp, run_texts={MIGRATED: kept, LEGACY: kept})) == []
    # a line the codemod's migration wrote, and the codemod's own migration, are none either
    codemod = frozenset({"ema = copy.deepcopy(model).to(torch.bfloat16)"})
    assert trace_findings(runs(cast), replace(amp, codemod_lines=codemod)) == []
    assert trace_findings(runs(cast), replace(amp, own_migration=True)) == []
    # modes that cast the model trace f32, not this
    assert trace_findings(runs(cast), replace(amp, f32=True, f64=False)) == []


def test_amp_names_bf16_made_on_a_line_of_the_legacy_text_where_the_fp32_reference_made_none():
    """amp: ``shadow = {n: p.detach().to(SHADOW_DTYPE, copy=True) ...}`` is a line of the legacy script, and a
    hand-made text changed ``SHADOW_DTYPE = torch.float32`` to bf16 on another line: the EMA is bf16 and PASSed,
    the line's text being the legacy script's (bench/unseen/hunt33 EDA1). The FP32 reference run (the legacy
    text without its switch) made no bf16 at that line: the migration's, named. Where the reference run made
    bf16 there too, the author's own; a reference run that recorded no device ops excuses by the text as
    before."""
    legacy = LEGACY_TEXT.replace("ema = copy.deepcopy(model)", "ema = copy.deepcopy(model).to(EMA_DTYPE)")
    line = legacy.splitlines().index("ema = copy.deepcopy(model).to(EMA_DTYPE)") + 1
    hand = legacy.replace("import torch\n", "import torch\nEMA_DTYPE = torch.bfloat16\n")
    line_hand = line + 1
    cast = {"kind": "downcast", "file": "/u/train.py", "op": "Tensor.to", "order": 5, "operands": ["f32"]}
    amp = TraceSources(
        {"/u/train.py": hand}.get,
        {MIGRATED: {"/u/train.py": hand}, LEGACY: {"/u/train.py": legacy}, REFERENCE: {"/u/train.py": legacy}},
        f32=False,
        f64=True,
        own_migration=False,
    )
    made = runs([{**cast, "line": line_hand, "result": "bf16"}])
    made[REFERENCE] = RunRecord(REFERENCE, losses=[1.0, 0.9, 0.8], trace=Trace.from_json(record([], device_ops=True)))
    (found,) = trace_findings(made, amp)
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.BF16_BY_HAND, "BFM205", line_hand)
    # the line is the codemod's migration's too (a hand text made from it): named all the same
    codemod = frozenset(x.strip() for x in legacy.splitlines())
    assert [f.diagnostic.line for f in trace_findings(made, replace(amp, codemod_lines=codemod))] == [line_hand]
    # the reference run made bf16 at that line too (the legacy script's constant was bf16): the author's own
    made[REFERENCE].trace = Trace.from_json(record([{**cast, "line": line, "result": "bf16"}], device_ops=True))
    assert trace_findings(made, amp) == []
    # a reference run that recorded only what left the device tells nothing: excused by the text
    made[REFERENCE].trace = Trace.from_json(record([]))
    assert trace_findings(made, amp) == []


def _left_autocast(line, op, end_col, **more):
    """A ``loss_outside_autocast`` event at ``line`` of /u/train.py (columns 7 to ``end_col``), bf16."""
    event = {"kind": "loss_outside_autocast", "file": "/u/train.py", "line": line, "end_line": line, "col": 7}
    return {**event, "end_col": end_col, "op": op, "order": 3, "operands": [], "result": "bf16", **more}


def test_amp_names_where_a_bf16_loss_left_autocast_once_the_control_computes_it_in_f32():
    """amp: the loss handed to backward was computed in bf16 outside autocast (bench/unseen/hunt23 MTA2:
    precision named the cause, no line). Named at the first bf16 operation of its chain outside autocast,
    and only once the autocast control (the FP32 script under autocast) computes the loss in f32: where
    autocast itself leaves it bf16 (a mean of the output) it is autocast's own."""
    text = LEGACY_TEXT.replace("preds = out.cpu()", "loss = (out - 1).pow(2).mean()")
    line = text.splitlines().index("loss = (out - 1).pow(2).mean()") + 1
    left = [_left_autocast(line, "Tensor.sub", 14)]
    amp = TraceSources({"/u/train.py": text}.get, {}, f32=False, f64=True, own_migration=True)
    made = runs(left)
    assert trace_findings(made, amp) == []  # before the control is made
    made[AUTOCAST] = RunRecord(AUTOCAST, losses=[1.0, 0.9, 0.8], loss_dtype="f32")
    (found,) = trace_findings(made, amp)
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (
        FindingKind.LOSS_OUTSIDE_AUTOCAST,
        "BFM206",
        line,
    )
    assert "computes the loss in bf16 outside autocast (`Tensor.sub`" in found.diagnostic.message
    made[AUTOCAST].loss_dtype = "bf16"  # autocast's own bf16 loss
    assert trace_findings(made, amp) == []
    made[AUTOCAST] = RunRecord(AUTOCAST, error="exited with code 1")  # no step recorded: it tells nothing
    assert trace_findings(made, amp) == []


def test_amp_names_a_loss_whose_chain_ran_an_fp32_op_of_autocast_in_bf16_without_the_control():
    """amp: the loss's chain outside autocast ran ``F.cross_entropy`` on bf16 operands, an op autocast runs in
    float32 (torch_xla/csrc/autocast_mode.cpp): named without the autocast control, whose run is made only when
    the losses do not match (a bf16 cross-entropy summed with an f32 margin term matched and PASSed)."""
    text = LEGACY_TEXT.replace("preds = out.cpu()", "loss = F.cross_entropy(out, y) + margin")
    line = text.splitlines().index("loss = F.cross_entropy(out, y) + margin") + 1
    left = [_left_autocast(line, "F.cross_entropy", 29, fp32_op="F.cross_entropy")]
    amp = TraceSources({"/u/train.py": text}.get, {}, f32=False, f64=True, own_migration=True)
    (found,) = trace_findings(runs(left), amp)
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (
        FindingKind.LOSS_OUTSIDE_AUTOCAST,
        "BFM206",
        line,
    )
    assert "autocast runs `F.cross_entropy` in float32" in found.diagnostic.message
    left[0].pop("fp32_op")  # a chain of ops autocast leaves in bf16 too: only the control tells
    assert trace_findings(runs(left), amp) == []


def test_f32_on_lines_a_migration_added_is_excused_only_inside_the_codemods_helpers():
    """The helpers the codemod writes (their docstrings carry its mark) compute in f32 on purpose (FP32
    master weights); any other added line is the migration's reading of the user's code: a hand-made one
    that rewrote an EMA update in f32 passed while every added line was excused (bench/unseen/hunt23 MT4)."""
    helper = (
        "def clip_grad_norm_fp32_(params, max_norm):\n"
        '    """Added by bf16-migrate (replacing the legacy bf16 environment switch): the norm in FP32."""\n'
        "    return torch.stack([p.grad.float().norm() for p in params]).norm()\n"
    )
    ema = "t.copy_(t.float() * 0.99 + s.float() * 0.01)\n"
    text = MIGRATED_TEXT + "\n" + helper + ema
    where = {"helper": text.splitlines().index(helper.splitlines()[2]) + 1, "ema": len(text.splitlines())}
    events = {
        k: [{"kind": "compute", "file": "/u/train.py", "line": n, "op": "Tensor.mul", "order": n, "operands": ["f32"]}]
        for k, n in where.items()
    }
    own = TraceSources({"/u/train.py": LEGACY_TEXT}.get, {MIGRATED: {"/u/train.py": text}}, f32=True)
    assert trace_findings(runs(events["helper"]), own) == []
    (found,) = trace_findings(runs(events["ema"]), own)
    assert found.kind == FindingKind.COMPUTE and found.diagnostic.code == "BFM201"


def test_what_the_legacy_run_did_too_is_no_finding():
    # the legacy run ran the user's file: its lines are the original's (the call is line 12 there)
    legacy = [dict(e, line=12) if e["line"] == 13 else dict(e) for e in MEET_CHAIN]
    assert trace_findings(runs(MEET_CHAIN, legacy), sources()) == []
    # an op computing in f32 at the same line is the same fact whether its operands met bf16 there or not:
    # under XLA_DOWNCAST_BF16 a float64 table met the bf16 mask in the legacy run, its float32 copy computes
    # alone in the migrated one (bench/unseen/hunt23 TCR1, a false BFM203)
    computed = [dict(e, kind="compute", operands=["f32", "f32"]) for e in MEET_CHAIN if e["kind"] == "meet"]
    assert trace_findings(runs(computed, legacy), sources()) == []
    assert trace_findings(runs(computed), sources())
    # float64 where the legacy run computed in f32 is new (a float64 table left float64 under XLA_DOWNCAST_BF16,
    # which made it f32: bench/unseen/hunt25 TC2c PASSed)
    wider = [dict(e, operands=["f64", "f64"], result="f64") for e in computed]
    assert trace_findings(runs(wider, legacy), sources())


def test_a_copy_made_before_the_cast_is_named_at_the_copy_with_a_move_repair():
    events = [
        ev("create", 11, "copy.deepcopy", expr="copy.deepcopy(model)", operands=[], result="f32"),
        ev(
            "compute",
            8,
            "Tensor.mul_",
            expr="h + pos",
            operands=["f32"],
            result="f32",
            origin={"kind": "copy", "file": "/u/train.py", "line": 11, "op": "copy.deepcopy"},
            order=20,
            after_stop=True,
            step=3,
        ),
    ]
    (found,) = trace_findings(runs(events), sources())
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.COPY, "BFM202", 11)
    assert "after the recorded steps" in found.diagnostic.message
    assert found.repair is not None
    assert found.repair.kind == RepairKind.CAST_COPY and found.repair.span.anchor == "ema = copy.deepcopy(model)"


def test_exits_bf16_to_the_host_unless_cast_back_and_a_repair_only_for_floating_exits():
    base = dict(operands=["bf16"], exit_dtypes={"bfloat16": 2}, exits=2)
    bf16 = ev("exit", 14, "Tensor.cpu", expr="out.cpu()", **base)
    (found,) = trace_findings(runs([bf16]), sources())
    assert (found.diagnostic.code, found.diagnostic.line) == ("BFM210", 13)
    # the legacy run's exit there handed over float32: it does not hide the migrated run's bf16
    legacy_f32 = dict(bf16, line=13, exit_dtypes={"float32": 2}, exits=0)
    assert len(trace_findings(runs([bf16], [legacy_f32]), sources())) == 1
    assert trace_findings(runs([bf16], [dict(legacy_f32, exit_dtypes={"bfloat16": 2}, exits=2)]), sources()) == []
    assert found.repair is not None
    assert found.repair.kind == RepairKind.HOST_FLOAT
    cast_back = ev("exit", 14, "Tensor.cpu", expr="out.cpu()", cast_back=2, **base)
    assert trace_findings(runs([cast_back]), sources()) == []
    mixed = ev(
        "exit", 14, "Tensor.cpu", expr="out.cpu()", operands=["bf16"], exit_dtypes={"bfloat16": 1, "int64": 1}, exits=1
    )
    (found,) = trace_findings(runs([mixed]), sources())
    assert found.repair is None  # a blanket .float() would make the integer tensors float


def test_f32_computed_without_meeting_bf16_an_uncast_module_and_a_bf16_save_are_named():
    compute = ev(
        "compute",
        8,
        "Tensor.add",
        expr="h + pos",
        operands=["f32", "f32"],
        result="f32",
        origin={"kind": "create", "file": "/u/train.py", "line": 7, "op": "Tensor.float"},
    )
    (found,) = trace_findings(runs([compute]), sources())
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.COMPUTE, "BFM201", 8)
    assert found.repair is None  # where the f32 should end is the user's choice
    module = [
        ev("create", 10, "Net.to", expr="Net().to(dev)", operands=[], result="f32", module="Net"),
        ev(
            "compute",
            8,
            "F.linear",
            expr="h + pos",
            operands=["f32", "f32"],
            result="f32",
            origin={"kind": "module", "file": "/u/train.py", "line": 10, "op": "Net.to"},
            order=30,
        ),
    ]
    (found,) = trace_findings(runs(module), sources())
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.MODULE, "BFM203", 10)
    assert "moves `Net` to the device and nothing casts it" in found.diagnostic.message
    assert found.repair is not None
    assert found.repair.kind == RepairKind.CAST_MODULE and found.repair.span.anchor == "model = Net().to(dev)"
    save = ev("exit", 14, "torch.save", expr="out.cpu()", exit_dtypes={"bf16": 3, "s64": 1}, exits=3, flat_dict=True)
    (found,) = trace_findings(runs([save]), sources())
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.SAVE, "BFM211", 13)
    assert found.repair is not None
    assert found.repair.kind == RepairKind.SAVE_FLOAT
    nested = dict(save, flat_dict=False)
    assert trace_findings(runs([nested]), sources())[0].repair is None


def test_parameters_initialised_on_the_device_before_the_first_step_are_no_finding():
    """``nn.Linear(...)`` made in ``with torch.device(xla):`` fills its parameters in f32 there
    (``kaiming_uniform_``, ``uniform_``), then the model cast makes them bf16: no step computes on
    them in f32 (one BFM201 per layer before: bench/unseen/hunt10 devctx_dockerfile, lrfind_actions).
    The same initialiser once a step ran, or any other op before it, is still a finding."""
    origin = {"kind": "unknown", "file": "", "line": 0, "op": ""}
    init = [
        ev("compute", 8, op, operands=["f32"], result="f32", origin=origin, order=i)
        for i, op in enumerate(("torch.kaiming_uniform_", "torch.uniform_"), start=1)
    ]
    assert trace_findings(runs(init), sources()) == []
    in_step = [dict(e, step=1) for e in init]
    assert trace_findings(runs(in_step), sources())
    other = [ev("compute", 8, "Tensor.add", operands=["f32", "f32"], result="f32", origin=origin)]
    assert trace_findings(runs(other), sources())
    # what an initialiser computes with on its line (`nn.init.orthogonal_`: a QR of a normal draw) is its own,
    # before the first step (bench/unseen/hunt34 init_after_move); the same ops on another line are not
    qr = [
        ev("compute", 8, op, operands=["f32"], result="f32", origin=origin, order=i)
        for i, op in enumerate(("Tensor.normal_", "torch.linalg_qr", "Tensor.sign", "Tensor.mul_"), start=1)
    ]
    assert trace_findings(runs(qr), sources()) == []
    assert trace_findings(runs([*qr, dict(qr[1], line=12, order=9)]), sources())
    assert trace_findings(runs([dict(e, step=1) for e in qr]), sources())
    # a layer's own initial values computed in its `__init__` on the device (`nn.Parameter(torch.randn(r, n,
    # device=w.device) * 0.02)`, a LoRA adapter injected before the model's cast: two hunts' only findings); the
    # same op outside an `__init__`, or in one once a step ran, is still a finding
    scaled = [ev("compute", 8, "Tensor.mul", operands=["f32"], result="f32", origin=origin, in_init=True)]
    assert trace_findings(runs(scaled), sources()) == []
    assert trace_findings(runs([dict(scaled[0], in_init=False)]), sources())
    assert trace_findings(runs([dict(scaled[0], step=1)]), sources())


def test_a_failure_the_legacy_run_did_not_have_names_its_line_and_the_failed_op():
    events = [
        ev("op_error", 15, "Tensor.numpy", operands=["cpu:bfloat16"], message="TypeError: bf16", mixed=False),
        ev("exception", 15, "TypeError", message="TypeError: Got unsupported ScalarType BFloat16", after_stop=True),
    ]
    (found,) = trace_findings(runs(events), sources())
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.FAILURE, "BFM220", 14)
    assert "raised `TypeError: Got unsupported ScalarType BFloat16` here" in found.diagnostic.message
    assert "`Tensor.numpy` raised at line 14" in found.diagnostic.message


def test_a_failure_after_a_meet_names_the_wide_operands_own_precision():
    """The run failed on mixed precisions after an f32 (or a float64) operand met bf16: the failure names the first
    meet with that operand's own precision (a hunt's float64 target was called "f32")."""
    failure = ev("exception", 15, "RuntimeError", message="RuntimeError: different precisions of operands")
    for wide in ("f32", "f64"):
        chain = [dict(MEET_CHAIN[0], result=wide), dict(MEET_CHAIN[1], operands=["bf16", wide], result=wide), failure]
        found = {f.diagnostic.code: f.diagnostic for f in trace_findings(runs(chain), sources())}
        assert f"; {wide} met bf16 first at line 8 (`Tensor.add`)" in found["BFM220"].message, found


def test_a_finfo_of_bf16_where_the_legacy_run_read_float32s_is_named():
    """``torch.finfo(x.dtype)`` at a line read float32's constants in the legacy run (the switch's label) and
    bf16's in the migrated run: named at that line (BFM208; a hunt's clamp at bf16's eps changed a loss by 13-52%
    with no line named). The same dtype in both runs, or a line the legacy run did not query, is no finding."""
    legacy = [ev("finfo", 9, "torch.finfo", operands=[], result="f32")]
    migrated = [ev("finfo", 9, "torch.finfo", operands=[], result="bf16")]
    (found,) = trace_findings(runs(migrated, legacy), sources())
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.FINFO, "BFM208", 9)
    assert "reads bf16's constants (`torch.finfo`), where the legacy run read f32's" in found.diagnostic.message
    assert trace_findings(runs([dict(migrated[0], result="f32")], legacy), sources()) == []
    assert trace_findings(runs(migrated), sources()) == []


def test_a_line_the_legacy_run_computed_in_f32_and_the_migration_in_bf16_is_named():
    """Under XLA_DOWNCAST_BF16 the legacy run computed a float64 value's line in float32 (a ``compute`` event of
    f32); the migrated run executed that line (its lines run) with no f32 there: bf16, lower than the legacy run
    (BFM209). An f32 event of the migrated run there, or a line it never ran, is none; amp records no f32."""
    legacy = [ev("compute", 8, "Tensor.add", expr="h + pos", operands=["f32", "f32"], result="f32")]
    made = runs([], legacy)
    made[MIGRATED].trace = replace(made[MIGRATED].trace, lines_run={"/u/train.py": frozenset({8, 15})})
    (found,) = trace_findings(made, sources())
    assert (found.kind, found.diagnostic.code, found.diagnostic.line) == (FindingKind.LOWERED, "BFM209", 8)
    assert "computed in float32 in the legacy run (`Tensor.add`" in found.diagnostic.message
    made[MIGRATED].trace = replace(made[MIGRATED].trace, lines_run={"/u/train.py": frozenset({15})})
    assert trace_findings(made, sources()) == []
    kept = [dict(legacy[0], origin={"kind": "create", "file": "/u/train.py", "line": 7, "op": "Tensor.float"})]
    made = runs(kept, legacy)
    made[MIGRATED].trace = replace(made[MIGRATED].trace, lines_run={"/u/train.py": frozenset({8})})
    assert not [f for f in trace_findings(made, sources()) if f.kind is FindingKind.LOWERED]
    assert trace_findings(made, replace(sources(), f32=False, f64=True)) == []
    # a legacy run that crashed (nn.GRU under XLA_USE_BF16 in torch-xla 2.9) computed nothing the migration must keep
    made = runs([], legacy)
    made[MIGRATED].trace = replace(made[MIGRATED].trace, lines_run={"/u/train.py": frozenset({8})})
    made[LEGACY].error = "exited with code 1"
    assert trace_findings(made, sources()) == []


def test_a_deliberate_island_the_migration_reported_excuses_its_f32_and_the_part_passes():
    island = Diagnostic("BFM082", "/u/train.py", 7, 5, "kept in f32 on purpose", True)
    excused = trace_findings(runs(MEET_CHAIN[:2]), sources({"/u/train.py": [(7, 8, island)]}))
    assert len(excused) == 1 and excused[0].excused is island and not excused[0].counts
    part = trace_part(excused, runs(MEET_CHAIN[:2]))
    assert part is not None
    assert part.status == PASS and "deliberate f32 island" in part.detail and part.figures["excused"] == 1
    counted = trace_findings(runs(MEET_CHAIN[:2]), sources())
    part = trace_part(counted, runs(MEET_CHAIN[:2]))
    assert part is not None
    assert part.status == FAIL and "BFM200 train.py:8" in part.detail and part.figures["by_code"] == {"BFM200": 1}


def test_the_part_says_how_far_the_trace_went():
    clean = trace_part([], runs([]))
    assert clean is not None
    assert clean.status == PASS and "traced to the script's end" in clean.detail
    partial = trace_part([], runs([], end="budget"))
    assert partial is not None
    assert "the code after that was not traced" in partial.detail and partial.figures["complete"] is False
    assert trace_part([], {MIGRATED: RunRecord(MIGRATED)}) is None  # no trace, no part


def test_island_spans_map_through_the_work_tree_text():
    island = Diagnostic("BFM082", "t.py", 7, 5, "m", True)

    @dataclass
    class Island:
        first_line: int
        last_line: int
        finding: Diagnostic = field(default=island)

    assert island_spans([Island(7, 8)], LEGACY_TEXT, MIGRATED_TEXT) == [(7, 8, island)]


def test_a_record_round_trips_and_paths_move_to_the_users_directory():
    trace = Trace.from_json(record(MEET_CHAIN))
    assert trace is not None
    again = Trace.from_json(trace.to_dict())
    assert again is not None and again.to_dict() == trace.to_dict()
    moved = Trace.from_json(record([dict(e, file="/tmp/ws/migrated/train.py") for e in MEET_CHAIN]))
    assert moved is not None
    moved.with_paths({"/tmp/ws/migrated": "/u"})
    assert {e.file for e in moved.events} == {"/u/train.py"}
    assert moved.end == TraceEnd.SCRIPT_EXIT and moved.of_kind(Kind.MEET)[0].f32_names == ["pos"]


# -- verify --fix's loop, with a verify that is told what the run would find ---------------------


@dataclass
class _Report:
    migrated_source: str
    trace_findings: list
    modules: dict = field(default_factory=dict)
    diagnostics: list = field(default_factory=list)

    @property
    def verdict(self):
        class V:
            status = "PASS" if not [f for f in self.trace_findings if f.counts] else "FAIL"

        return V()


def _finding_at(text, line, expr, kind=RepairKind.HOST_FLOAT):
    from bf16_migrate.repairs import RepairSite, Span
    from bf16_migrate.verify.trace_findings import TraceFinding

    code = text.splitlines()[line - 1]
    col = code.index(expr)
    site = RepairSite(kind, "/u/train.py", Span(line, col, line, col + len(expr), code))
    return TraceFinding(FindingKind.EXIT, Diagnostic("BFM210", "/u/train.py", line, col + 1, "m", False), [], [], site)


def test_the_fix_loop_stops_when_the_trace_is_clean():
    from bf16_migrate.verify.fix import verify_and_fix

    calls = []

    def verify(script, **kwargs):
        text = kwargs.get("migrated_source", "a = x.cpu()\nb = y.cpu()\n")
        calls.append(text)
        found = [
            _finding_at(text, n + 1, line.split("= ")[1])
            for n, line in enumerate(text.splitlines())
            if ".float()" not in line
        ]
        return _Report(text, found)

    result = verify_and_fix(Path("/u/train.py"), verify=verify)
    assert result.stopped == "the trace is clean"
    assert calls == ["a = x.cpu()\nb = y.cpu()\n", "a = x.cpu().float()\nb = y.cpu().float()\n"]
    assert len(result.applied) == 2 and result.left == []


def test_the_fix_loop_is_bounded_and_stops_when_nothing_applies():
    from bf16_migrate.verify.fix import MAX_ROUNDS, verify_and_fix

    calls = []

    def endless(script, **kwargs):
        # each round the run names the next operand left f32: four rounds would be needed
        text = kwargs.get("migrated_source", "import torch\ny = a + b + c + d\n")
        calls.append(text)
        left = [name for name in "abcd" if f"{name}.to(" not in text]
        if not left:
            return _Report(text, [])
        expr = text.splitlines()[1].split("= ", 1)[1]
        found = _finding_at(text, 2, expr, RepairKind.CAST_OPERAND)
        found.repair = replace(found.repair, names=(left[0],))
        return _Report(text, [found])

    result = verify_and_fix(Path("/u/train.py"), verify=endless)
    assert len(calls) == 1 + MAX_ROUNDS and len(result.rounds) == MAX_ROUNDS
    assert calls[-1] == "import torch\ny = a.to(torch.bfloat16) + b.to(torch.bfloat16) + c.to(torch.bfloat16) + d\n"
    assert len(result.left) == 1
    assert result.stopped == f"{MAX_ROUNDS} rounds, the most --fix makes"

    def stuck(script, **kwargs):
        return _Report("a = f(x)\n", [_finding_at("a = f(x)\n", 1, "f(x)")])  # no unit repairs f(x)

    result = verify_and_fix(Path("/u/train.py"), verify=stuck)
    assert result.stopped == "no repair applies to what is left" and len(result.left) == 1


# -- --trace FILE: the rewrite applies a stored trace without the device --------------------------


SCRIPT = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch_xla


    def main():
        device = torch_xla.device()
        model = torch.nn.Linear(4, 1).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        host = torch.device(os.environ.get("HOST_DEVICE", "cpu"))  # a device the code cannot tell
        for _ in range(3):
            x = torch.randn(8, 4).to(device)
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
        preds = model(torch.randn(2, 4).to(device)).to(host)
        print(preds.numpy())


    main()
    """
)


@pytest.fixture
def stored(tmp_path, monkeypatch):
    """A legacy script and the `verify --json` document a run of its migration would write."""
    from bf16_migrate.python import migrate_source
    from bf16_migrate.repairs import RepairSite, Span

    monkeypatch.chdir(tmp_path)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    migrated = migrate_source(SCRIPT, "stochastic", str(script)).code
    # the exit the reading cannot tell (`.to(host)`, a device named at run time), which the run traced
    line = next(n for n, text in enumerate(migrated.splitlines(), 1) if ".to(host)" in text)
    text = migrated.splitlines()[line - 1]
    expr = text[text.index("model(") : text.index(".to(host)") + len(".to(host)")]
    site = RepairSite(
        RepairKind.HOST_FLOAT,
        "train.py",
        Span(line, text.index(expr), line, text.index(expr) + len(expr), text),
        op="Tensor.to",
        finding=("BFM210", 17, 13),
        message="`model(...).to(host)` hands bf16 to the host",
    )
    doc = {
        "schema": "bf16-migrate/verify/2",
        "mode": "stochastic",
        "trace_findings": [{"code": "BFM210", "path": "train.py", "line": 17, "col": 13, "repair": site.to_dict()}],
    }
    (tmp_path / "verify.json").write_text(json.dumps(doc))
    return script


def test_the_rewrite_applies_a_stored_trace_and_reports_it_at_the_original_line(stored):
    from click.testing import CliRunner

    from bf16_migrate.cli import main

    result = CliRunner().invoke(main, ["train.py", "--trace", "verify.json", "--output-format", "text"])
    assert result.exit_code == 0, result.output
    text = stored.read_text()
    assert ".to(host).float()" in text and "model.to(torch.bfloat16)" in text
    assert "train.py:17:13: BFM210 `model(...).to(host)` hands bf16 to the host (repaired: host float) [fixed]" in (
        result.output
    )
    again = CliRunner().invoke(main, ["train.py", "--trace", "verify.json", "--output-format", "text"])
    assert again.exit_code == 0, again.output
    assert stored.read_text() == text  # a second application changes nothing
    assert "(repaired already: host float)" in again.output


def test_a_stored_trace_of_another_mode_or_no_trace_is_refused_in_one_line(stored, tmp_path):
    from click.testing import CliRunner

    from bf16_migrate.cli import main

    result = CliRunner().invoke(main, ["train.py", "--trace", "verify.json", "--mode", "amp"])
    assert result.exit_code == 2
    assert "verify.json was made in mode stochastic, not amp" in result.output
    (tmp_path / "other.json").write_text("{}")
    result = CliRunner().invoke(main, ["train.py", "--trace", "other.json"])
    assert result.exit_code == 2 and "not a `bf16-migrate verify --json` document" in result.output


def test_a_round_whose_run_fails_goes_on_but_fix_keeps_the_last_state_that_ran():
    from bf16_migrate.verify.fix import verify_and_fix
    from bf16_migrate.verify.records import RunError

    def verify(script, **kwargs):
        text = kwargs.get("migrated_source", "a = x.cpu()\nb = f(y)\n")
        if ".float()" not in text:
            return _Report(text, [_finding_at(text, 1, "x.cpu()")])
        # the repair lets the run reach a place that crashes, and nothing repairs that one
        error = RunError("the migrated run failed: exited with code 1")
        error.runs = {"migrated": RunRecord("migrated", exception="ValueError: mixed precision")}
        error.findings = [_finding_at(text, 2, "f(y)")]
        error.migrated_source = text
        raise error

    result = verify_and_fix(Path("/u/train.py"), verify=verify)
    assert result.rounds[0].applied and result.rounds[0].verdict.startswith("ERROR")
    assert result.applied == [] and result.texts == {} and result.report is not None
    assert "the repairs kept are those of the last run that did not fail" in result.stopped


def test_in_a_master_weights_mode_the_trace_does_not_record_the_optimizer_steps_f32():
    """gpu-compatible's optimizer steps on FP32 master weights: the child's tracer, told so
    (``step_f32``), is inside a step from torch's global optimizer step pre-hook to its post-hook
    (CPU tensors, in a process of its own: the tracer stays on torch's mode stack)."""
    import subprocess
    import sys

    child = Path(__file__).resolve().parent.parent / "bf16_migrate" / "verify" / "_child" / "dtype_trace.py"
    code = textwrap.dedent(
        f"""\
        import importlib.util
        import torch
        from torch.optim.optimizer import register_optimizer_step_pre_hook
        spec = importlib.util.spec_from_file_location("dtype_trace", {str(child)!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        tracer = module.Tracer([], True, lambda: 0, lambda: False)
        tracer.step_f32 = {{step_f32}}
        module.install(tracer, torch)
        seen = []
        register_optimizer_step_pre_hook(lambda *_: seen.append(tracer._in_step))
        param = torch.nn.Parameter(torch.ones(2))
        param.grad = torch.ones(2)
        torch.optim.SGD([param], lr=0.1).step()
        print(seen, tracer._in_step)
        """
    )
    for step_f32, want in ((True, "[1] 0"), (False, "[0] 0")):
        out = subprocess.run(
            [sys.executable, "-c", code.replace("{step_f32}", str(step_f32))],
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == want, out.stderr


def test_f32_that_began_where_the_migration_wrote_float32_is_the_migrations_own():
    """stochastic keeps loss accumulators FP32 (the mode's rule adds ``dtype=torch.float32`` to the
    factory): its meeting with the bf16 loss is the migration's choice, not a finding; the same
    accumulator made f32 by the user's own line (no float32 written by the migration) is one."""
    legacy = "acc = torch.zeros(1, device=dev)\nloss = model(x)\nacc += loss\n"
    migrated = "acc = torch.zeros(1, device=dev, dtype=torch.float32)\nloss = model(x)\nacc += loss\n"
    meet = {
        "kind": "meet",
        "file": "/u/loop.py",
        "line": 3,
        "op": "Tensor.add_",
        "order": 3,
        "operands": ["f32", "bf16"],
        "result": "f32",
        "origin": {"kind": "create", "file": "/u/loop.py", "line": 1, "op": "torch.zeros"},
        "f32_args": [0],
    }
    create = {"kind": "create", "file": "/u/loop.py", "line": 1, "op": "torch.zeros", "order": 1, "result": "f32"}

    def found(ran: str, own: bool = True):
        texts = {"/u/loop.py": legacy}
        sources = TraceSources(texts.get, {MIGRATED: {"/u/loop.py": ran}}, f32=True, own_migration=own)
        return trace_findings(runs([create, meet]), sources)

    assert [f.diagnostic.code for f in found(migrated)] == []
    # a hand-made text that writes float32 there is judged as any f32 (bench/unseen/hunt23 MT2b PASSed)
    assert [f.diagnostic.code for f in found(migrated, own=False)] == ["BFM200"]
    assert [f.diagnostic.code for f in found(legacy.replace("acc += loss", "acc += loss  # kept"))] == ["BFM200"]
    # unless the line is the codemod's, as it wrote it (its migration edited elsewhere: hunt25 TCP1)
    codemod = frozenset(line.strip() for line in migrated.splitlines())
    texts = {"/u/loop.py": legacy}
    edited = "# tuned by hand\n" + migrated
    origin = {"kind": "create", "file": "/u/loop.py", "line": 2, "op": "torch.zeros"}
    shifted = [{**create, "line": 2}, {**meet, "line": 4, "origin": origin}]
    sources = TraceSources(
        texts.get, {MIGRATED: {"/u/loop.py": edited}}, f32=True, own_migration=False, codemod_lines=codemod
    )
    assert trace_findings(runs(shifted), sources) == []
    # under `--against REV` the user's file is the migrated text and the revision's is the legacy run's: the
    # codemod's own migration, committed, is judged as it is by a plain verify (it FAILed the CI path:
    # bench/unseen/hunt33 GOWNa)
    against = TraceSources({"/u/loop.py": migrated}.get, {LEGACY: {"/u/loop.py": legacy}}, f32=True, own_migration=True)
    assert trace_findings(runs([create, meet]), against) == []
    hand = replace(against, own_migration=False)
    assert [f.diagnostic.code for f in trace_findings(runs([create, meet]), hand)] == ["BFM200"]


def test_an_island_excuses_a_hand_made_text_only_where_its_lines_are_the_codemods():
    """The codemod's kept island (lines 2-3 of the legacy text) in a text that differs from its migration:
    kept where the island's lines are the codemod's (a comment added at the top), not where a hand rewrote
    them (an f32 GELU on the island's line: bench/unseen/hunt23 TC4b)."""
    from bf16_migrate.python.outcome import F32Island

    legacy = "def f(v):\n    u = v.float()\n    return u.exp().to(v.dtype)\n\nx = 1\n"
    codemod = "import torch\n" + legacy
    island = F32Island(2, 3, Diagnostic("BFM088", "/u/f.py", 2, 1, "kept", True))
    assert same_lines(island, legacy, codemod, "# tuned\n" + codemod)
    assert same_lines(island, legacy, codemod, codemod.replace("x = 1", "x = 2"))
    assert not same_lines(island, legacy, codemod, codemod.replace("u.exp()", "u.exp().float()"))


def test_amp_whose_fp32_reference_fails_is_a_fail_when_the_trace_names_float64_the_legacy_run_did_not_have():
    """amp compares with an FP32 reference; a script whose NumPy float64 meets the model's f32 fails there (torch-xla's
    HLO verifier), so verify stopped with "the reference run failed" (exit 2) although the legacy and migrated runs
    both ran and the trace named the float64 matmul (bench/unseen/hunt39 numpy_f64_matmul amp). The trace compares
    the migrated run with the legacy one and needs no reference: a failed check, FAIL. With a clean trace it is still
    a run that could not be made."""
    origin = {"kind": "create", "file": "/u/train.py", "line": 7, "op": "torch.from_numpy"}
    made = [
        ev("create", 7, "torch.from_numpy", operands=[], result="f64"),
        ev("compute", 8, "Tensor.mul", expr="h + pos", operands=["f64", "f64"], result="f64", origin=origin),
    ]
    amp = replace(sources(), f32=False, f64=True)
    made_runs = runs(made)
    made_runs[REFERENCE] = RunRecord(REFERENCE, error="exited with code 1: ValueError: [hlo verifier] mixed precision")
    findings = trace_findings(made_runs, amp)
    with pytest.raises(RunError) as failed:
        _raise_unusable(mode_named("amp"), made_runs, findings)
    assert failed.value.broke and "BFM204 train.py:8" in failed.value.fail_reason, failed.value.fail_reason
    clean = runs([])
    clean[REFERENCE] = made_runs[REFERENCE]
    with pytest.raises(RunError) as unusable:
        _raise_unusable(mode_named("amp"), clean, [])
    assert not unusable.value.broke
    # nor when the legacy run failed too: nothing ran to compare the trace with
    made_runs[LEGACY] = RunRecord(LEGACY, error="exited with code 1")
    with pytest.raises(RunError) as neither:
        _raise_unusable(mode_named("amp"), made_runs, findings)
    assert not neither.value.broke


def test_amp_names_a_forward_pass_left_outside_autocast():
    """amp: a module's forward pass run outside autocast (an evaluation probe, a final render) computes its matrix
    products in f32 on the FP32 parameters where autocast and the legacy run computed them in bf16; verify PASSed such
    texts, the codemod's own among them, reading the training step's graph alone (bench/unseen/hunt42 V1). Each such
    place is a finding (BFM207) at the line that ran it, once; an island the migration reported there excuses it; the
    casting modes do not read it."""
    line = MIGRATED_TEXT.splitlines().index("out = model(x.to(torch.bfloat16))") + 1
    forward = [
        ev("forward_outside_autocast", line, "F.linear", operands=["f32", "f32", "f32"], result="f32", after_stop=True),
        ev("forward_outside_autocast", line, "F.conv2d", operands=["f32", "f32"], result="f32", order=line + 1),
    ]
    amp = replace(sources(), f32=False, f64=True)
    found = trace_findings(runs(forward), amp)
    user_line = LEGACY_TEXT.splitlines().index("out = model(x)") + 1  # the user's file: the legacy text
    assert [(f.kind, f.diagnostic.code, f.diagnostic.line) for f in found] == [
        (FindingKind.FORWARD_OUTSIDE_AUTOCAST, "BFM207", user_line)
    ]
    assert "runs `F.linear` on the module's float32 parameters outside autocast" in found[0].diagnostic.message
    # where the forward was called from is said too (a hunt's forward behind a `partial`: the block belongs there)
    caller = MIGRATED_TEXT.splitlines().index("preds = out.cpu()") + 1
    called = dict(forward[0], callers=[["/u/train.py", caller, caller, 8, len("preds = out.cpu()")]])
    evidence = trace_findings(runs([called]), amp)[0].evidence
    user_caller = LEGACY_TEXT.splitlines().index("preds = out.cpu()") + 1  # the user's line, not the run's
    assert user_caller != caller and f"  called from train.py:{user_caller} (`out.cpu()`)" in evidence, evidence
    part = trace_part(found, runs(forward))
    assert part is not None and part.status == FAIL and "BFM207 train.py:" in part.detail
    island = Diagnostic(path="/u/train.py", line=user_line, col=1, code="BFM089", message="kept", fixed=True)
    excused = trace_findings(runs(forward), replace(amp, islands={"/u/train.py": [(user_line, user_line, island)]}))
    assert [f.counts for f in excused] == [False]
    assert trace_findings(runs(forward), sources()) == []  # stochastic: f32 is read as meets and computes
