"""Unit tests of the graph evidence (bf16_migrate.verify.graphs) and of the verdict parts that
use it (precision, graph), on synthetic HLO in torch-xla 2.9's dump format: no XLA."""

from __future__ import annotations

from pathlib import Path

import pytest

from bf16_migrate.rules import mode_named
from bf16_migrate.verify.compare import FAIL, INCONCLUSIVE, PASS, SDPA_HINT, judge, mode_compile_allowance
from bf16_migrate.verify.graphs import (
    GraphStats,
    dump_files_for,
    hlo_stats,
    leftover_graphs,
    parse_dump,
    read_step_graph,
)
from bf16_migrate.verify.records import RunRecord
from bf16_migrate.verify.trace import Kind, Trace, TraceEvent

from conftest import part_of

# The shape of a torch-xla 2.9 `XLA_SAVE_TENSORS_FMT=hlo` entry (DebugUtil::SaveTensorsGraphInfo).
ENTRY = """[ScheduleSyncTensorsGraph]
TensorsGraphInfo:
  sync (/venv/torch_xla/torch_xla.py:87)
  main (/tmp/train.py:{line})
  <module> (/tmp/train.py:90)

Root Hashes: (5a573ddba91350e9ce8f0a8e942afc52)

## BEGIN_GRAPH
{hlo}

Graph Hash: {hash}

## END_GRAPH

"""

# the backward of https://github.com/pytorch/xla/issues/3718 in bf16 (mm -> cast f32 -> permute ->
# cast bf16), an AdamW-style update (bf16 x f32 scalar in f32, rounded back), an f32 dot, a bf16
# convolution, scalar converts.
HLO_MIXED = """HloModule IrToHlo.40, entry_computation_layout={(bf16[22,44]{1,0}, f32[], f32[4,4]{1,0})->(bf16[66,44]{0,1}, bf16[22,44]{1,0}, f32[4,4]{1,0})}

%AddComputation.3 (x.4: f32[], y.5: f32[]) -> f32[] {
  %x.4 = f32[] parameter(0)
  %y.5 = f32[] parameter(1)
  ROOT %add.6 = f32[] add(f32[] %x.4, f32[] %y.5)
}

ENTRY %IrToHlo.40 (p0.1: bf16[22,44], p1.2: f32[], p2.3: f32[4,4]) -> (bf16[66,44], bf16[22,44], f32[4,4]) {
  %p0.1 = bf16[22,44]{1,0} parameter(0)
  %constant.7 = bf16[] constant(1)
  %broadcast.8 = bf16[22,66]{1,0} broadcast(bf16[] %constant.7), dimensions={}
  %transpose.9 = bf16[44,22]{0,1} transpose(bf16[22,44]{1,0} %p0.1), dimensions={1,0}
  %dot.10 = bf16[44,66]{1,0} dot(bf16[44,22]{0,1} %transpose.9, bf16[22,66]{1,0} %broadcast.8), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %convert.11 = f32[44,66]{1,0} convert(bf16[44,66]{1,0} %dot.10)
  %transpose.12 = f32[66,44]{0,1} transpose(f32[44,66]{1,0} %convert.11), dimensions={1,0}
  %convert.13 = bf16[66,44]{0,1} convert(f32[66,44]{0,1} %transpose.12)
  %p1.2 = f32[] parameter(1)
  %convert.14 = f32[22,44]{1,0} convert(bf16[22,44]{1,0} %p0.1)
  %broadcast.15 = f32[22,44]{1,0} broadcast(f32[] %p1.2), dimensions={}
  %multiply.16 = f32[22,44]{1,0} multiply(f32[22,44]{1,0} %convert.14, f32[22,44]{1,0} %broadcast.15)
  %convert.17 = bf16[22,44]{1,0} convert(f32[22,44]{1,0} %multiply.16)
  %p2.3 = f32[4,4]{1,0} parameter(2)
  %dot.18 = f32[4,4]{1,0} dot(f32[4,4]{1,0} %p2.3, f32[4,4]{1,0} %p2.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %convert.19 = bf16[] convert(f32[] %p1.2)
  %convert.20 = bf16[4,4]{1,0} convert(f32[4,4]{1,0} %dot.18)
  %convert.21 = f32[4,4]{1,0} convert(bf16[4,4]{1,0} %convert.20)
  %reshape.22 = bf16[1,1,4,4]{3,2,1,0} reshape(bf16[4,4]{1,0} %convert.20)
  %convolution.23 = bf16[1,1,4,4]{3,2,1,0} convolution(bf16[1,1,4,4]{3,2,1,0} %reshape.22, bf16[1,1,4,4]{3,2,1,0} %reshape.22), window={size=4x4 pad=1_2x1_2}, dim_labels=bf01_oi01->bf01
  ROOT %tuple.24 = (bf16[66,44]{0,1}, bf16[22,44]{1,0}, f32[4,4]{1,0}, /*index=3*/bf16[1,1,4,4]{3,2,1,0}) tuple(bf16[66,44]{0,1} %convert.13, bf16[22,44]{1,0} %convert.17, f32[4,4]{1,0} %convert.21, bf16[1,1,4,4]{3,2,1,0} %convolution.23)
}"""  # noqa: E501  (the HLO text as torch_xla dumps it, one instruction a line)

HLO_SMALL = """HloModule IrToHlo.5, entry_computation_layout={(bf16[2]{0})->(bf16[2]{0})}

ENTRY %IrToHlo.5 (p0.1: bf16[2]) -> (bf16[2]) {
  %p0.1 = bf16[2]{0} parameter(0)
  %constant.2 = bf16[] constant(0)
  %broadcast.3 = bf16[2]{0} broadcast(bf16[] %constant.2), dimensions={}
  ROOT %tuple.4 = (bf16[2]{0}) tuple(bf16[2]{0} %broadcast.3)
}"""  # noqa: E501  (the HLO text as torch_xla dumps it, one instruction a line)


def entry(hlo: str, graph_hash: str, line: int = 80) -> str:
    return ENTRY.format(hlo=hlo, hash=graph_hash, line=line)


def test_parse_dump_splits_entries_and_reads_frames_and_hashes():
    text = (
        entry(HLO_MIXED, "aaa")
        + entry(HLO_SMALL, "bbb", line=81)
        + "[ScheduleSyncTensorsGraph]\n## BEGIN_GRAPH\nHloMod"
    )
    graphs = parse_dump(text)
    assert [g.graph_hash for g in graphs] == ["aaa", "bbb"]  # the truncated third entry is dropped
    assert graphs[0].frames[1] == "main (/tmp/train.py:80)"
    assert graphs[0].roots == ("5a573ddba91350e9ce8f0a8e942afc52",)
    assert graphs[0].hlo.startswith("HloModule IrToHlo.40") and graphs[0].hlo.rstrip().endswith("}")


def test_hlo_stats_counts_matmuls_converts_and_round_trips():
    st = hlo_stats(HLO_MIXED)
    assert (st.matmuls, st.matmuls_bf16, st.matmuls_f32, st.matmuls_other) == (3, 2, 1, 0)
    assert st.bf16_matmul_share == 2 / 3
    # tensor converts by direction; the scalar one apart
    assert st.converts == {"bf16->f32": 3, "f32->bf16": 3}
    assert st.scalar_converts == {"f32->bf16": 1}
    # the stray cast of pytorch/xla#3718 (HLO_MIXED): bf16 -> f32 -> transpose -> bf16 computes nothing
    assert st.round_trips["bf16->f32->bf16 (layout)"] == 1
    # bf16 x f32 scalar in f32, rounded back: torch-xla's opmath, counted apart
    assert st.round_trips["bf16->f32->bf16 (elementwise)"] == 1
    # f32 -> bf16 -> f32: rounding between two f32 values
    assert st.round_trips["f32->bf16->f32 (layout)"] == 1
    assert st.round_trip_count("layout") == 2 and st.round_trip_count() == 3
    assert "transpose f32[66,44] <- convert f32[44,66]" in st.round_trip_examples["bf16->f32->bf16 (layout)"][0]
    # the entry computation's parameters only (not the reducer's x/y)
    assert st.parameter_types == {"bf16": 1, "f32": 2}
    assert st.instructions == 24


# a softmax over f32 logits promoted by an f32 mask (bf16 sim - f32 eye), a bf16 one, a scalar exp
HLO_SOFTMAX = """HloModule IrToHlo.9, entry_computation_layout={(bf16[4,4]{1,0}, f32[4,4]{1,0})->(f32[4,4]{1,0})}

ENTRY %IrToHlo.9 (p0.1: bf16[4,4], p1.2: f32[4,4]) -> (f32[4,4], bf16[4,4], f32[]) {
  %p0.1 = bf16[4,4]{1,0} parameter(0)
  %p1.2 = f32[4,4]{1,0} parameter(1)
  %convert.3 = f32[4,4]{1,0} convert(bf16[4,4]{1,0} %p0.1)
  %subtract.4 = f32[4,4]{1,0} subtract(f32[4,4]{1,0} %convert.3, f32[4,4]{1,0} %p1.2)
  %exponential.5 = f32[4,4]{1,0} exponential(f32[4,4]{1,0} %subtract.4)
  %exponential.6 = bf16[4,4]{1,0} exponential(bf16[4,4]{1,0} %p0.1)
  %constant.7 = f32[] constant(1)
  %e.8 = f32[] exponential(f32[] %constant.7)
  ROOT %t.9 = (f32[4,4], bf16[4,4], f32[]) tuple(f32[4,4] %exponential.5, bf16[4,4] %exponential.6, f32[] %e.8)
}"""  # noqa: E501  (the HLO text as torch_xla dumps it, one instruction a line)


def test_hlo_stats_counts_the_exponentials_of_tensors_by_element_type():
    """A softmax computes one exponential per element: the f32 one is what an f32 mask made of a
    bf16 run's logits; a scalar's is none."""
    st = hlo_stats(HLO_SOFTMAX)
    assert st.exponentials == {"f32": 1, "bf16": 1}
    assert GraphStats.from_dict(st.to_dict()).exponentials == {"f32": 1, "bf16": 1}


def test_hlo_stats_of_text_that_is_not_hlo_is_empty():
    st = hlo_stats("not hlo at all\n")
    assert st.instructions == 0 and st.bf16_matmul_share is None and st.round_trips == {}


def _dump_with_marks(tmp_path, chunks, step_ends):
    """Write ``chunks`` (dump entries) as one run's dump; ``step_ends``: after how many chunks each
    optimizer step ended. Returns (dump files, marks, end)."""
    data = "".join(chunks).encode()
    dump = tmp_path / "run.graphs.0"
    dump.write_bytes(data)
    marks = [{"run.graphs.0": len("".join(chunks[:n]).encode())} for n in step_ends]
    return dump_files_for(tmp_path / "run.graphs"), marks, {"run.graphs.0": len(data)}


def test_read_step_graph_sums_every_sync_of_the_last_complete_window(tmp_path):
    # gradient accumulation, a sync per micro-batch: before step 1 ends, two micro-batch graphs;
    # then per step the optimizer graph and the next step's two micro-batch graphs; the stop
    # comes after the optimizer graph of step 3 (a window holding part of a period only)
    opt, micro = entry(HLO_SMALL, "opt", line=60), entry(HLO_MIXED, "micro", line=55)
    chunks = [micro, micro, opt, micro, micro, opt, micro, micro, opt]
    files, marks, end = _dump_with_marks(tmp_path, chunks, [2, 5, 8])
    st = read_step_graph(files, marks, end)
    assert st is not None
    # the graphs between the ends of steps 2 and 3: one optimizer graph, two micro-batches
    assert st.step == 2 and st.graphs_in_window == 3 and st.dynamo_graphs == 0
    assert st.matmuls == 2 * hlo_stats(HLO_MIXED).matmuls and st.matmuls_bf16 == 2 * 2
    assert st.instructions == 2 * hlo_stats(HLO_MIXED).instructions + hlo_stats(HLO_SMALL).instructions
    assert st.round_trips["bf16->f32->bf16 (layout)"] == 2
    assert st.graph_hash == "micro" and st.frames[1] == "main (/tmp/train.py:55)"  # the largest graph's
    assert st.syncs == 9 and st.distinct_graphs == 2
    # bytes after the record's end mark (the harness's own read-back) are ignored
    st2 = read_step_graph(files, marks, {"run.graphs.0": marks[2]["run.graphs.0"]})
    assert st2 is not None
    assert st2.syncs == 8 and st2.step == 2


def test_read_step_graph_of_one_sync_per_step_is_that_sync(tmp_path):
    init, step, item = entry(HLO_SMALL, "init"), entry(HLO_MIXED, "step"), entry(HLO_SMALL, "item")
    # the script syncs after optimizer.step(), and reads loss.item() after step 2
    chunks = [init, step, step, item, step, step]
    files, marks, end = _dump_with_marks(tmp_path, chunks, [1, 2, 4, 5])
    st = read_step_graph(files, marks, end)
    assert st is not None
    assert st.step == 3 and st.graphs_in_window == 1 and st.graph_hash == "step"
    assert st.matmuls == hlo_stats(HLO_MIXED).matmuls


DYNAMO_ENTRY = ENTRY.replace(
    "  sync (/venv/torch_xla/torch_xla.py:87)\n  main (/tmp/train.py:{line})",
    "  extract_graph_helper (/venv/torch_xla/_dynamo/dynamo_bridge.py:428)\n"
    "  fwd (/venv/torch/_dynamo/backends/torchxla.py:44)",
)


def test_read_step_graph_counts_the_graphs_dynamo_compiled_once_each(tmp_path):
    # torch.compile(backend="openxla"): the forward graph is dumped twice when dynamo extracts it
    # (hash, then compile), then runs from the cache; each step's sync holds the optimizer only
    fwd = DYNAMO_ENTRY.format(hlo=HLO_MIXED, hash="fwd")
    opt = entry(HLO_SMALL, "opt")
    chunks = [fwd, fwd, opt, opt, opt, opt]
    files, marks, end = _dump_with_marks(tmp_path, chunks, [2, 3, 4, 5])
    st = read_step_graph(files, marks, end)
    assert st is not None
    assert st.step == 3 and st.graphs_in_window == 1 and st.dynamo_graphs == 1
    assert st.matmuls == hlo_stats(HLO_MIXED).matmuls
    assert st.instructions == hlo_stats(HLO_MIXED).instructions + hlo_stats(HLO_SMALL).instructions


def test_read_step_graph_without_dump_or_marks(tmp_path):
    assert read_step_graph([], None) is None
    assert read_step_graph([tmp_path / "missing.0"], None) is None
    dump = tmp_path / "g.0"
    dump.write_text(entry(HLO_MIXED, "x"))
    st = read_step_graph([dump], None)  # no marks: everything is window 0
    assert st is not None and st.step is None and st.matmuls == 3


def test_dump_files_for_matches_ordinal_suffixes_only(tmp_path):
    for name in ("r.graphs.0", "r.graphs.1", "r.graphs.tmp", "r.graphsX.0"):
        (tmp_path / name).write_text("")
    assert [p.name for p in dump_files_for(tmp_path / "r.graphs")] == ["r.graphs.0", "r.graphs.1"]


def test_graph_stats_round_trip_through_dict():
    st = hlo_stats(HLO_MIXED)
    d = st.to_dict()
    assert d["layout_round_trips"] == 1 and d["bf16_matmul_share"] == 2 / 3
    back = GraphStats.from_dict(d)
    assert back.round_trips == st.round_trips and back.matmuls == 3


# -- the verdict parts that use the graphs --------------------------------------------------

LEGACY = [0.71484375, 0.8828125, 0.84375, 0.7421875, 0.73046875, 0.625, 0.7265625, 0.6484375, 0.6796875]
FP32 = [x * (1.0 + 0.011 * (-1) ** i) + 1e-7 for i, x in enumerate(LEGACY)]


def graph(bf16=8, f32=0, layout=0, elementwise=0, converts=None, step=9):
    rt = {}
    if layout:
        rt["bf16->f32->bf16 (layout)"] = layout
    if elementwise:
        rt["bf16->f32->bf16 (elementwise)"] = elementwise
    return GraphStats(
        instructions=300,
        matmuls=bf16 + f32,
        matmuls_bf16=bf16,
        matmuls_f32=f32,
        converts=converts or {},
        round_trips=rt,
        round_trip_examples={"bf16->f32->bf16 (layout)": ["convert bf16[4,8] <- convert f32[4,8]"]},
        step=step,
    )


def make(name, losses, g, compiles=2, params=None, state=None, marks: list[int | None] | None = None):
    return RunRecord(
        name,
        losses=list(losses),
        param_dtypes=params or ({"bfloat16": 6} if name == "migrated" else {"float32": 6}),
        device_param_dtypes={"bf16": 6} if name in ("legacy", "migrated") else {"f32": 6},
        state_dtypes=state,
        legacy_env={"XLA_USE_BF16": "1"} if name == "legacy" else {},
        graph=g,
        compile_count=compiles,
        compiles_at_step=list(marks or [1, 2] + [2] * (len(losses) - 2)),
    )


def runs(mg=None, lg=None, rg=None, migrated=LEGACY, **kw):
    return {
        "legacy": make("legacy", LEGACY, lg if lg is not None else graph()),
        "migrated": make("migrated", migrated, mg if mg is not None else graph(elementwise=12), **kw),
        "reference": make("reference", FP32, rg if rg is not None else graph(bf16=0, f32=8)),
    }


def parts(v):
    return {p.name: p.status for p in v.parts}


def test_clean_graph_passes_and_reports_the_figures():
    v = judge(mode_named("stochastic"), runs())
    assert parts(v) == {"runs": PASS, "trains": PASS, "precision": PASS, "matches": PASS, "graph": PASS}
    g = part_of(v, "graph")
    assert "8 of 8 matmuls bf16" in g.detail and "opmath" in g.detail
    assert g.figures["layout_round_trips"] == 0 and g.figures["compiles"] == 2
    assert "step graph 8 of 8 matmuls bf16" in part_of(v, "precision").detail


def _amp_round_trips(sdpa_upcasts):
    r = runs(mg=graph(layout=2), migrated=[x * (1 + 2e-4) for x in FP32], params={"float32": 6})
    r["migrated"].sdpa_upcasts = sdpa_upcasts
    return r


def test_layout_round_trip_fails_the_graph_part_with_the_example_and_hint():
    # amp whose math attention upcast bf16 q/k/v (the flag missing): the round trips are the migration's
    for counted in (4, None):  # None: a record of a harness that did not count, held to the same bar
        v = judge(mode_named("amp"), _amp_round_trips(counted))
        g = part_of(v, "graph")
        assert g.status == FAIL and "2 bf16->f32->bf16 round trip(s)" in g.detail
        assert "convert bf16[4,8] <- convert f32[4,8]" in g.detail
        assert SDPA_HINT in v.notes
        assert not v.passed


def test_autocasts_own_round_trips_are_a_fact_not_a_failure():
    """amp with no attention upcast counted: the round trips are torch's own under autocast (a
    recurrent layer's), which the migration neither wrote nor can remove; the bf16 modes still fail."""
    v = judge(mode_named("amp"), _amp_round_trips(0))
    g = part_of(v, "graph")
    assert g.status == PASS and "torch's own under autocast" in g.detail and "convert bf16[4,8]" in g.detail
    assert g.figures["layout_round_trips"] == 0 and g.figures["autocast_round_trips"] == 2
    assert SDPA_HINT not in v.notes and v.passed
    bf16 = runs(mg=graph(layout=2, elementwise=12))
    bf16["migrated"].sdpa_upcasts = 0
    assert part_of(judge(mode_named("stochastic"), bf16), "graph").status == FAIL


def test_more_compilations_than_legacy_fail_beyond_the_allowance():
    assert mode_compile_allowance(mode_named("stochastic")) == 1 and mode_compile_allowance(mode_named("amp")) == 0
    ok = runs(**{})
    ok["migrated"].compile_count = 3  # the model cast's graph: allowed in stochastic mode
    assert part_of(judge(mode_named("stochastic"), ok), "graph").status == PASS
    bad = runs()
    bad["migrated"].compile_count = 6
    bad["migrated"].compiles_at_step = [1, 2, 3, 4, 5, 6, 6, 6, 6]
    g = part_of(judge(mode_named("stochastic"), bad), "graph")
    assert g.status == FAIL and "more than allowed" in g.detail
    assert "after step(s) 3, 4, 5" in g.detail  # recompilations in the steady state, shown


def test_amp_may_not_compile_more_than_legacy():
    r = runs(migrated=[x * (1 + 2e-4) for x in FP32], params={"float32": 6})
    r["migrated"].compile_count = 3
    assert part_of(judge(mode_named("amp"), r), "graph").status == FAIL


def rooted(graph_hash: str, roots: str) -> str:
    """A dump entry of HLO_SMALL with these root hashes (``"a, b"``)."""
    return entry(HLO_SMALL, graph_hash).replace("(5a573ddba91350e9ce8f0a8e942afc52)", f"({roots})")


def test_a_step_graph_with_tensors_left_pending_is_a_leftover_graph(tmp_path):
    # measured shape (per-example gradients by vmap(grad(...))): step 1, then the step graph at every
    # mark_step, once with 2 tensors an earlier step left pending; an eval graph of its own; a dynamo graph
    step1, step, more = rooted("s1", "a, b"), rooted("st", "a, b, c"), rooted("st+", "a, b, c, x, y")
    item, fwd = rooted("item", "z"), DYNAMO_ENTRY.format(hlo=HLO_SMALL, hash="fwd").replace("5a573ddb", "a, b, c, d")
    graphs = parse_dump("".join([fwd, step1, step, step, more, step, item, step]))
    assert leftover_graphs(graphs) == 1
    # the same tensors joining step 1's graph compile nothing more: nothing to count
    assert leftover_graphs(parse_dump("".join([rooted("s1+", "a, b, x, y"), step, step, item, step]))) == 0
    # a graph synced as often as the step graph is the loop's own (two graphs a step), however rooted
    assert leftover_graphs(parse_dump("".join([step, more, step, more]))) == 0
    # another graph (other roots) is no leftover; nor is a dump without root hashes
    assert leftover_graphs(parse_dump("".join([step, step, rooted("other", "a, q")]))) == 0
    assert leftover_graphs(parse_dump(entry(HLO_SMALL, "x").replace("Root Hashes", "Roots") * 3)) == 0
    files, marks, end = _dump_with_marks(tmp_path, [step1, step, step, more, step, step], [1, 2, 3, 4, 5])
    st = read_step_graph(files, marks, end)
    assert st is not None and st.leftover_graphs == 1 and st.distinct_graphs == 3


def test_compilations_of_leftover_graphs_are_not_counted_in_the_migrated_run():
    """A step graph compiled again with tensors an earlier step left pending joins whichever
    mark_step finds them alive: the migrated run compiled it and the legacy run did not (the
    private_sgd fixture under load, amp: 5 against 4). Not counted in the migrated run; a
    compilation more than that still fails. The comparison run's own never tighten the bar: a
    script that syncs many times a step has such graphs in every run, as many as its timing gives
    (fixtures/contract/numpy_returns: 3 in the legacy run, 1 in the migrated one)."""
    r = runs(migrated=[x * (1 + 2e-4) for x in FP32], params={"float32": 6})
    r["migrated"].compile_count = 3
    r["migrated"].compiles_at_step = [1, 2, 2, 2, 3, 3, 3, 3, 3]
    assert r["migrated"].graph is not None
    r["migrated"].graph.leftover_graphs = 1
    g = part_of(judge(mode_named("amp"), r), "graph")
    assert g.status == PASS, g.detail
    assert "not counted: 1 of the migrated run's, the step's graph compiled again with tensors an earlier step" in (
        g.detail
    )
    assert "new graphs compiled after" not in g.detail and g.figures["compiles"] == 2
    r["migrated"].compile_count = 4
    assert part_of(judge(mode_named("amp"), r), "graph").status == FAIL
    r["migrated"].compile_count = 3
    assert r["legacy"].graph is not None
    r["legacy"].compile_count = 3
    r["legacy"].graph.leftover_graphs = 3
    assert part_of(judge(mode_named("amp"), r), "graph").status == PASS
    r["migrated"].graph.leftover_graphs = 0
    r["migrated"].compile_count = 4
    assert part_of(judge(mode_named("amp"), r), "graph").status == FAIL


def test_amp_may_compile_what_the_fp32_reference_compiles():
    """amp's model runs in FP32 as the FP32 reference's does: a graph that run compiles beyond the
    legacy one's is none of the migration's (a right amp migration FAILed on 24 compilations, the
    legacy run 23 and the FP32 reference 24: bench/unseen/hunt10 proto_conda); one more still fails."""
    r = runs(migrated=[x * (1 + 2e-4) for x in FP32], params={"float32": 6})
    r["reference"].compile_count = 3
    r["migrated"].compile_count = 3
    g = part_of(judge(mode_named("amp"), r), "graph")
    assert g.status == PASS and "reference run 3" in g.detail
    r["migrated"].compile_count = 4
    assert part_of(judge(mode_named("amp"), r), "graph").status == FAIL
    stochastic = runs()
    stochastic["reference"].compile_count = 5
    stochastic["migrated"].compile_count = 5
    assert part_of(judge(mode_named("stochastic"), stochastic), "graph").status == FAIL


def test_f32_matmuls_where_legacy_had_bf16_fail_precision_with_the_hint():
    v = judge(mode_named("stochastic"), runs(mg=graph(bf16=15, f32=6)))
    p = part_of(v, "precision")
    assert p.status == FAIL and "6 of 21 matmuls of the step graph run in f32 where the legacy run had 0" in p.detail
    assert SDPA_HINT in v.notes


def test_f32_matmuls_the_legacy_run_had_too_are_allowed():
    # XLA_DOWNCAST_BF16 keeps f64 code in f32: the legacy graph has those f32 matmuls as well.
    v = judge(mode_named("stochastic"), runs(mg=graph(bf16=6, f32=2), lg=graph(bf16=6, f32=2)))
    assert part_of(v, "precision").status == PASS


def test_fp32_migration_fails_precision_on_the_graph_too():
    v = judge(mode_named("stochastic"), runs(mg=graph(bf16=0, f32=8), migrated=FP32, params={"float32": 6}))
    assert part_of(v, "precision").status == FAIL
    assert "no matmul of the migrated step graph is bf16" in part_of(v, "precision").detail


def test_amp_needs_every_matmul_in_bf16():
    amp = [x * (1 + 2e-4) for x in FP32]
    assert part_of(judge(mode_named("amp"), runs(migrated=amp, params={"float32": 6})), "precision").status == PASS
    v = judge(mode_named("amp"), runs(mg=graph(bf16=6, f32=2), migrated=amp, params={"float32": 6}))
    assert part_of(v, "precision").status == FAIL and "outside the autocast block" in part_of(v, "precision").detail


def test_amp_step_graph_without_a_forward_pass_is_judged_by_the_autocast_control():
    """amp: an L-BFGS fit of a temperature over logits computed before the loop (bench/unseen/hunt35 lbfgs_amp): the
    step graph holds the optimizer's dot products only, none bf16, as in the autocast control's (the FP32 script
    under autocast): no forward pass runs there, nothing to put under autocast. Without the control's graph, or
    with bf16 matmuls in the control's, it FAILs as before."""
    amp = [x * (1 + 2e-4) for x in FP32]
    r = runs(mg=graph(bf16=0, f32=8), migrated=amp, params={"float32": 6})
    assert part_of(judge(mode_named("amp"), r), "precision").status == FAIL
    r["autocast"] = make("autocast", amp, graph(bf16=0, f32=8), params={"float32": 6})
    precision = part_of(judge(mode_named("amp"), r), "precision")
    assert precision.status == PASS and "the 8 others are autocast's own" in precision.detail, precision.detail
    r["autocast"] = make("autocast", amp, graph(bf16=8, f32=0), params={"float32": 6})
    precision = part_of(judge(mode_named("amp"), r), "precision")
    assert precision.status == FAIL and "no matmul of the migrated step graph is bf16" in precision.detail


def test_gpu_compatible_needs_fp32_optimizer_state():
    good = runs(state={"exp_avg": {"float32/f32": 6}, "step": {"float32@cpu": 6}})
    assert part_of(judge(mode_named("gpu-compatible"), good), "precision").status == PASS
    assert "optimizer state f32 x6" in part_of(judge(mode_named("gpu-compatible"), good), "precision").detail
    bad = runs(state={"exp_avg": {"bfloat16/bf16": 6}})
    p = part_of(judge(mode_named("gpu-compatible"), bad), "precision")
    assert p.status == FAIL and "master weights" in p.detail
    # stochastic keeps its state in bf16, like the legacy run
    assert part_of(judge(mode_named("stochastic"), bad), "precision").status == PASS


def test_no_graph_is_inconclusive_and_graphs_off_drops_the_part():
    r = runs()
    r["migrated"].graph = None
    assert part_of(judge(mode_named("stochastic"), r), "graph").status == INCONCLUSIVE
    assert judge(mode_named("stochastic"), r, graphs=False).part("graph") is None
    assert judge(mode_named("stochastic"), r, graphs=False).passed


def test_neuron_stochastic_skips_the_onset_check_and_says_why():
    migrated = [x * 1.003 for x in LEGACY]  # stochastic rounding: never bit-identical
    v = judge(mode_named("stochastic"), runs(migrated=migrated), device="NEURON")
    assert part_of(v, "matches").status == PASS
    assert "onset check skipped" in part_of(v, "matches").detail
    assert any("measured on the XLA CPU device only" in n for n in v.notes)
    # on the CPU no first step the same is no PASS. With the opmath round trips of this migrated graph (its
    # scalars computed in f32 where the legacy graph rounded them to bf16) it is INCONCLUSIVE; without, FAIL
    on_cpu = part_of(judge(mode_named("stochastic"), runs(migrated=migrated)), "matches")
    assert on_cpu.status == INCONCLUSIVE and on_cpu.figures["onset_like_control"]
    assert part_of(judge(mode_named("stochastic"), runs(migrated=migrated, mg=graph())), "matches").status == FAIL


def test_report_shows_the_evidence_table_and_json_schema():
    import json
    from pathlib import Path

    from bf16_migrate.verify import VerifyReport, format_report
    from bf16_migrate.verify.report import SCHEMA, report_dict

    r = runs(state={"exp_avg": {"bfloat16/bf16": 6}, "step": {"float32@cpu": 6}})
    rep = VerifyReport(
        script=Path("train.py"),
        mode=mode_named("stochastic"),
        steps=9,
        runs=r,
        verdict=judge(mode_named("stochastic"), r),
        legacy_label="git HEAD~1 (0123456789ab)",
    )
    text = format_report(rep)
    assert "legacy version: git HEAD~1 (0123456789ab)" in text
    assert "Evidence (executed training-step graph" in text
    row = next(line for line in text.splitlines() if line.startswith("migrated |"))
    assert "8 of 8" in row and "0 / 12" in row and "bf16 x6" in row
    assert text.index("(rel. diff: how far the migrated run's loss is from the legacy run's") < text.index(
        "graph      PASS"
    )
    assert 'docs/verify.md, "Verdict and tolerances")' in text and "(tolerances:" not in text
    d = report_dict(rep)
    assert d["schema"] == SCHEMA and d["legacy_version"].startswith("git HEAD~1")
    assert d["runs"]["migrated"]["graph"]["matmuls_bf16"] == 8
    assert d["runs"]["migrated"]["state_dtypes"]["exp_avg"] == {"bfloat16/bf16": 6}
    assert [p["name"] for p in d["parts"]] == ["runs", "trains", "precision", "matches", "graph"]
    json.dumps(d, allow_nan=False)


def test_compile_allowance_itemizes_what_the_migration_added():
    from bf16_migrate.verify.allowance import compile_allowance

    suite = Path(__file__).resolve().parent.parent / "bench" / "calibration"

    def items(case, migration):
        legacy = (suite / case / "train.py").read_text()
        return [(a.count, a.what) for a in compile_allowance(legacy, (suite / case / migration).read_text())]

    assert items("grad_accum", "right/stochastic.py") == [(1, "the model cast")]
    assert items("grad_accum", "right/gpu-compatible.py") == [(1, "the model cast")]  # master weights: none
    assert items("grad_accum", "right/amp.py") == []
    # the run-time input cast costs a graph only under dynamo
    assert items("compiled_model", "right/stochastic.py") == [
        (1, "the model cast"),
        (1, "the input-cast hook under torch.compile"),
    ]
    assert items("gru_crash", "right/stochastic.py") == [(1, "the model cast")]
    assert compile_allowance("x = (", "y = 1") == [] and compile_allowance(None, "y = 1") == []


def test_graph_part_allows_the_itemized_compilations_and_names_them():
    from bf16_migrate.verify.allowance import Allowance

    items = [Allowance(1, "the model cast", "m"), Allowance(1, "the input-cast hook under torch.compile", "h")]
    r = runs(compiles=8)
    r["legacy"].compile_count = r["reference"].compile_count = 6
    v = judge(mode_named("stochastic"), r, allowance=items)
    part = part_of(v, "graph")
    assert part.status == PASS, part.detail
    assert "8 XLA compilations (legacy run 6, allowed +1 for the model cast, +1 for the input-cast hook" in part.detail
    assert part.figures["compile_allowance"] == 2
    assert part_of(judge(mode_named("stochastic"), r, allowance=items[:1]), "graph").status == FAIL
    assert part_of(judge(mode_named("stochastic"), r, allowance=[]), "graph").status == FAIL


def test_a_whole_step_counts_every_matmul_with_an_f32_operand():
    """combine (the graphs of one step taken together) keeps the mixed f32/bf16 matmuls: they
    compute in f32 (the guarantee of tests/precision_guarantee.py reads ``f32_matmuls``)."""
    from bf16_migrate.verify.graphs import GraphStats, combine

    one = GraphStats(matmuls=3, matmuls_f32=1, matmuls_other=2, matmuls_with_f32=3)
    two = GraphStats(matmuls=2, matmuls_bf16=2)
    total = combine([one, two])
    assert (total.matmuls, total.matmuls_bf16, total.matmuls_with_f32, total.f32_matmuls) == (5, 2, 3, 3)


def test_late_compilations_the_legacy_run_has_too_are_not_shown_as_new():
    # tabular_downcast prints a loss mean and a metric every 5 steps: two graphs compiled at step 5
    # in the legacy run as in the migrated one (torch-xla 2.9, XLA CPU device); the excess is at steps 1-2
    r = runs()
    r["legacy"].compile_count = 6
    r["legacy"].compiles_at_step = [2, 3, 4, 4, 4, 6, 6, 6, 6]
    r["migrated"].compile_count = 8
    r["migrated"].compiles_at_step = [2, 5, 6, 6, 6, 8, 8, 8, 8]
    g = part_of(judge(mode_named("stochastic"), r), "graph")
    assert g.status == FAIL and "8 XLA compilations, more than allowed (legacy run 6" in g.detail
    assert "new graphs compiled after" not in g.detail
    r["migrated"].compiles_at_step = [2, 5, 6, 6, 6, 8, 8, 9, 9]
    r["migrated"].compile_count = 9
    assert "new graphs compiled after step(s) 7" in part_of(judge(mode_named("stochastic"), r), "graph").detail


def _passed_report(mode: str = "stochastic", label: str | None = None):
    from pathlib import Path

    from bf16_migrate.verify import VerifyReport

    r = runs()
    rep = VerifyReport(
        script=Path("src/train.py"),
        mode=mode_named(mode),
        steps=9,
        runs=r,
        verdict=judge(mode_named(mode), r),
        legacy_label=label,
    )
    assert rep.verdict.passed
    return rep


@pytest.mark.parametrize(
    ("in_tree", "next_line"),
    [
        (False, "  apply: bf16-migrate src/train.py --mode gpu-compatible"),
        (True, "  commit: git commit -a   # the migration verified above"),
    ],
)
def test_a_passed_verify_names_the_next_command(capsys, in_tree, next_line):
    """After ``VERDICT: PASS``: the rewrite that applies the verified migration to the legacy
    file (verify migrated a copy), or, with ``--against`` (the work tree holds the migration),
    its commit; a verify that did not pass names neither."""
    from bf16_migrate import cli
    from bf16_migrate.next_steps import after_pass

    rep = _passed_report("gpu-compatible", "git HEAD (0123456789ab)" if in_tree else None)
    after = after_pass(rep.script, rep.mode, migrated_in_tree=in_tree)
    with pytest.raises(SystemExit) as done:
        cli._finish_one(rep, [], cli._Outputs(), after)
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.rstrip("\n").endswith(f"VERDICT: PASS\n\nNext:\n{next_line}")
    rep.verdict.parts[0].status = FAIL
    with pytest.raises(SystemExit):
        cli._finish_one(rep, [], cli._Outputs(), after)
    assert "Next:" not in capsys.readouterr().out


def test_the_tolerance_lines_say_what_was_compared_in_words():
    from bf16_migrate.verify.compare import FALLBACK, TOLERANCES
    from bf16_migrate.verify.report import tolerance_words

    words = " ".join(line.strip() for line in tolerance_words(TOLERANCES["stochastic"]))
    assert words.startswith("(rel. diff: how far the migrated run's loss is from the legacy run's at the same step")
    assert words.endswith('docs/verify.md, "Verdict and tolerances")') and "bench/" not in words
    amp = " ".join(tolerance_words(TOLERANCES["amp"]))
    assert "from the FP32 reference run's" in amp
    fallback = " ".join(line.strip() for line in tolerance_words(FALLBACK))
    assert "measured in this verify: legacy run unusable" in fallback
    assert all(len(line) <= 76 for t in (TOLERANCES["gpu-compatible"], FALLBACK) for line in tolerance_words(t))


def test_the_first_steps_graphs_compiled_again_after_a_model_cast_are_allowed_once():
    """A script that syncs many times in its first step (a policy reading each action with
    ``.item()``: 21 graphs in step 1) compiles each of them again once the cast parameters are
    device data (measured on the XLA CPU device, torch-xla 2.9: legacy 25, migrated 46, the same
    graphs from step 3 on). Allowed, named, and only by the end of step 2: growth after it, or more
    than the first step's graphs again, is not."""
    from bf16_migrate.verify.allowance import Allowance, first_step_recompiles

    cast = [Allowance(1, "the model cast", "m")]
    r = runs(compiles=46, marks=[21, 43, 44, 45, 45, 45, 45, 45, 46])
    r["legacy"].compile_count = r["reference"].compile_count = 25
    r["legacy"].compiles_at_step = [21, 22, 23, 24, 24, 24, 24, 24, 25]
    part = part_of(judge(mode_named("stochastic"), r, allowance=cast), "graph")
    assert part.status == PASS, part.detail
    assert "+20 for the 21 graph(s) of step 1 compiled again once the cast parameters are device data" in part.detail
    # without a module cast there is nothing to compile again
    assert first_step_recompiles([], r["migrated"].compiles_at_step, r["legacy"].compiles_at_step) is None
    assert part_of(judge(mode_named("stochastic"), r, allowance=[]), "graph").status == FAIL
    # the same excess reached only after step 2 is the steady state's: not this item's
    late = runs(compiles=46, marks=[21, 22, 23, 44, 45, 45, 45, 45, 46])
    late["legacy"].compile_count = late["reference"].compile_count = 25
    late["legacy"].compiles_at_step = [21, 22, 23, 24, 24, 24, 24, 24, 25]
    assert part_of(judge(mode_named("stochastic"), late, allowance=cast), "graph").status == FAIL
    # at most the first step's graphs again: 2 graphs in step 1 allow at most 2 (the cast's +1 and one more)
    small = runs(compiles=10, marks=[2, 7, 8, 8, 8, 8, 8, 8, 10])
    small["legacy"].compile_count = small["reference"].compile_count = 4
    small["legacy"].compiles_at_step = [2, 3, 3, 3, 3, 3, 3, 3, 4]
    detail = part_of(judge(mode_named("stochastic"), small, allowance=cast), "graph").detail
    assert "more than allowed (legacy run 4, allowed +1 for the model cast, +1 for the 2 graph(s)" in detail
    # ops torch-xla runs on the CPU (a weight-norm model's _weight_norm_interface) execute the pending
    # convert of the parameters they need in step 1: the migrated run's own 4 graphs of step 1, of which
    # 2 hold the convert of the others and compile again at step 2 (measured on the XLA CPU device:
    # legacy 2, 4, 5 at the first steps' ends, migrated 4, 8, 9, the same from step 3 on)
    fallback = runs(compiles=9, marks=[4, 8, 9, 9, 9, 9, 9, 9, 9])
    fallback["legacy"].compile_count = fallback["reference"].compile_count = 5
    fallback["legacy"].compiles_at_step = [2, 4, 5, 5, 5, 5, 5, 5, 5]
    part = part_of(judge(mode_named("stochastic"), fallback, allowance=cast), "graph")
    assert part.status == PASS, part.detail
    assert "+3 for the 4 graph(s) of step 1 compiled again" in part.detail
    grows = runs(compiles=11, marks=[4, 8, 9, 9, 10, 10, 10, 11, 11])
    grows["legacy"].compile_count = grows["reference"].compile_count = 5
    grows["legacy"].compiles_at_step = [2, 4, 5, 5, 5, 5, 5, 5, 5]
    assert part_of(judge(mode_named("stochastic"), grows, allowance=cast), "graph").status == FAIL


def test_amps_onset_limit_grows_with_a_far_control_and_full_bf16_still_fails():
    """amp's onset limit (2e-3) grows to 0.6 x the full-bf16 control's median where that is more: a
    REINFORCE policy samples its data from its own outputs, so autocast's run is 0.0083 from the FP32
    one while the control is 0.057 from it (measured, 12 steps). A run that is the legacy run (full
    bf16 under the amp name) sits at the control's median and fails; near a close control the fixed
    limit holds."""
    far = [x * (1.0 + 0.057 * (-1) ** i) for i, x in enumerate(FP32)]
    amp_like = [x * (1.0 + 0.0083 * (-1) ** i) for i, x in enumerate(FP32)]
    r = runs(migrated=amp_like, params={"float32": 6})
    r["legacy"].losses = far
    part = part_of(judge(mode_named("amp"), r), "matches")
    assert part.status == PASS, part.detail
    assert "(limit 0.034 = 0.6 x the control's 0.057, above 0.002)" in part.detail
    full = runs(migrated=far, params={"float32": 6})
    full["legacy"].losses = far
    assert part_of(judge(mode_named("amp"), full), "matches").status == FAIL
    near = runs(migrated=[x * (1.0 + 0.0025 * (-1) ** i) for i, x in enumerate(FP32)], params={"float32": 6})
    near["legacy"].losses = [x * (1.0 + 0.003 * (-1) ** i) for i, x in enumerate(FP32)]
    detail = part_of(judge(mode_named("amp"), near), "matches").detail
    assert "median rel. diff of the first 9 steps 0.0025 (limit 0.002)" in detail


# an attention score made f64 by a float64 buffer: a bf16 dot, an f64 dot of the scores, an f32 one
HLO_F64 = """HloModule IrToHlo.8, entry_computation_layout={(bf16[4,4]{1,0}, f64[4,4]{1,0}, f32[4,4]{1,0})->(f64[4,4]{1,0})}

ENTRY %IrToHlo.8 (p0.1: bf16[4,4], p1.2: f64[4,4], p2.3: f32[4,4]) -> (bf16[4,4], f64[4,4], f32[4,4]) {
  %p0.1 = bf16[4,4]{1,0} parameter(0)
  %p1.2 = f64[4,4]{1,0} parameter(1)
  %p2.3 = f32[4,4]{1,0} parameter(2)
  %dot.4 = bf16[4,4]{1,0} dot(bf16[4,4]{1,0} %p0.1, bf16[4,4]{1,0} %p0.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dot.5 = f64[4,4]{1,0} dot(f64[4,4]{1,0} %p1.2, f64[4,4]{1,0} %p1.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dot.6 = f32[4,4]{1,0} dot(f32[4,4]{1,0} %p2.3, f32[4,4]{1,0} %p2.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t.7 = (bf16[4,4], f64[4,4], f32[4,4]) tuple(bf16[4,4] %dot.4, f64[4,4] %dot.5, f32[4,4] %dot.6)
}"""  # noqa: E501  (the HLO text as torch_xla dumps it, one instruction a line)


def test_f64_matmuls_are_counted_and_fail_in_every_mode_never_excused_by_the_autocast_control():
    """A float64 buffer the migration left (NumPy's ALiBi slopes) made the scores and the attention
    matmuls f64: no switch left f64 on the device, and autocast casts no float64, so an autocast control
    carrying the same buffer excuses nothing (a hunt's false PASS)."""
    st = hlo_stats(HLO_F64)
    assert (st.matmuls, st.matmuls_bf16, st.matmuls_with_f32, st.matmuls_with_f64) == (3, 1, 1, 1)
    assert GraphStats.from_dict(st.to_dict()).matmuls_with_f64 == 1
    f64 = GraphStats(matmuls=39, matmuls_bf16=6, matmuls_other=33, matmuls_with_f64=33, step=9)
    amp = runs(migrated=[x * (1 + 2e-4) for x in FP32], params={"float32": 6}, mg=f64)
    amp["autocast"] = RunRecord("autocast", losses=list(amp["migrated"].losses), graph=f64)
    p = part_of(judge(mode_named("amp"), amp), "precision")
    assert (
        p.status == FAIL and "33 of 39 matmuls of the step graph compute in f64 where the legacy run had 0" in p.detail
    )
    p = part_of(judge(mode_named("stochastic"), runs(mg=f64)), "precision")
    assert p.status == FAIL and "compute in f64" in p.detail
    # f64 matmuls the legacy graph had too are not the migration's
    assert "compute in f64" not in part_of(judge(mode_named("stochastic"), runs(mg=f64, lg=f64)), "precision").detail


def test_first_steps_apart_by_the_scalars_the_legacy_graph_rounded_are_inconclusive():
    """A MoCo migration (hunt15): the legacy graph rounded the momentum 0.99 to bf16, the migrated one
    computes it in f32 beside bf16 tensors (torch-xla's opmath: elementwise round trips the legacy graph
    did not have), so no first step is identical, as the FP32 reference's are not; every matmul bf16, the
    losses within the drift limit. The losses cannot tell it from a wrong migration: INCONCLUSIVE, not FAIL.
    Without such round trips, with an f32 matmul, or drifting: FAIL, as before."""
    near = [x * (1 + 0.004 * (-1) ** i) for i, x in enumerate(LEGACY)]
    v = judge(mode_named("stochastic"), runs(migrated=near))  # the migrated graph: 12 elementwise round trips
    matches = part_of(v, "matches")
    assert matches.status == INCONCLUSIVE and matches.figures["onset_like_control"], matches.detail
    assert "does 12 bf16->f32->bf16 round trip(s) of f32 arithmetic with Python scalars where the legacy one did 0" in (
        matches.detail
    )
    assert "cannot tell this migration from a wrong one" in matches.detail and v.status == INCONCLUSIVE
    for mg in (graph(), graph(bf16=7, f32=1, elementwise=12)):
        assert part_of(judge(mode_named("stochastic"), runs(migrated=near, mg=mg)), "matches").status == FAIL
    far = [x * 1.05 for x in LEGACY]
    assert part_of(judge(mode_named("stochastic"), runs(migrated=far)), "matches").status == FAIL
    f32_loss = runs(migrated=near)  # an input left f32: the loss f32 where the legacy one was bf16
    f32_loss["migrated"].loss_dtype, f32_loss["legacy"].loss_dtype = "f32", "bf16"
    assert part_of(judge(mode_named("stochastic"), f32_loss), "matches").status == FAIL


def _went_on(migrated_total: int, migrated_marks: list[int | None], exit_reason: str = "script_exit"):
    """GR1's recorded shape (bench/unseen/hunt33, stochastic, a script of 9 steps here): every run
    ended on its own after its loop, the legacy one compiling 1 graph there (its ``.cpu()`` of a
    mean), the FP32 reference 1; the counts at every step as recorded."""
    marks = [0, 2, 3, 3, 3, 3, 3, 3, 3]
    r = runs(compiles=migrated_total, marks=migrated_marks)
    r["legacy"].compile_count = r["reference"].compile_count = 4
    r["legacy"].compiles_at_step = list(marks)
    r["reference"].compiles_at_step = list(marks)
    for run in r.values():
        run.exit_reason = exit_reason
    return r


def test_compilations_after_the_recorded_steps_are_not_counted():
    """A right migration that writes ``.float().cpu()`` at the host exits after training converts
    on the device, a small graph per shape (bench/unseen/hunt33 GR1: 9 compilations, the legacy
    run 4, the counts at every step the same): counted by the end of the last recorded step, the
    ones after it shown and not judged."""
    from bf16_migrate.verify.allowance import Allowance

    cast = [Allowance(1, "the model cast", "m")]
    r = _went_on(9, [0, 2, 3, 3, 3, 3, 3, 3, 3])
    part = part_of(judge(mode_named("stochastic"), r, allowance=cast), "graph")
    assert part.status == PASS, part.detail
    assert "3 XLA compilations by the end of step 9 (legacy run 3, allowed +1 for the model cast)" in part.detail
    assert "not counted: what compiled after the end of step 9" in part.detail
    assert "6 in the migrated run and 1 in the legacy run" in part.detail
    assert part.figures["compiles"] == 3 and part.figures["compiles_through_step"] == 9
    assert part.figures["compiles_after_steps"] == {"migrated": 6, "legacy": 1}
    # records taken at the stop (the steps asked for reached) hold nothing after training: the whole count
    stopped = _went_on(9, [0, 2, 3, 3, 3, 3, 3, 3, 3], exit_reason="steps_reached")
    part = part_of(judge(mode_named("stochastic"), stopped, allowance=cast), "graph")
    assert part.status == FAIL and "9 XLA compilations, more than allowed (legacy run 4" in part.detail


def test_recompiling_every_step_still_fails_when_the_script_goes_on_past_its_steps():
    """A migration whose training compiles a new graph every step (a dtype that changes between
    steps, a shape-dependent cast) fails however the script ends, and so does one more graph than
    allowed by the end of the steps."""
    from bf16_migrate.verify.allowance import Allowance

    cast = [Allowance(1, "the model cast", "m")]
    r = _went_on(10, [0, 2, 3, 4, 5, 6, 7, 8, 9])
    part = part_of(judge(mode_named("stochastic"), r, allowance=cast), "graph")
    assert part.status == FAIL, part.detail
    assert "9 XLA compilations by the end of step 9, more than allowed (legacy run 3" in part.detail
    assert "new graphs compiled after step(s) 3, 4, 5, 6, 7, 8" in part.detail
    once = _went_on(6, [0, 3, 5, 5, 5, 5, 5, 5, 5])
    assert part_of(judge(mode_named("stochastic"), once, allowance=cast), "graph").status == FAIL
    # a run with no count at the step falls back to the whole records
    r["legacy"].compiles_at_step = [0, 2, 3, 3, 3, 3, 3, 3, None]
    part = part_of(judge(mode_named("stochastic"), r, allowance=cast), "graph")
    assert part.status == FAIL and "10 XLA compilations, more than allowed (legacy run 4" in part.detail


def test_leftover_graphs_after_the_counted_step_are_not_taken_off_its_count():
    """A leftover graph (:func:`leftover_graphs`) excuses a compilation only where it is counted:
    one first synced after the end of the last counted step is none of that count's."""
    from bf16_migrate.verify.allowance import Allowance

    cast = [Allowance(1, "the model cast", "m")]
    r = _went_on(7, [0, 4, 6, 6, 6, 6, 6, 6, 6])
    g = r["migrated"].graph
    assert g is not None
    g.leftover_graphs, g.leftover_windows = 2, [2, 9]
    part = part_of(judge(mode_named("stochastic"), r, allowance=cast), "graph")
    assert part.status == FAIL and "5 XLA compilations by the end of step 9, more than allowed" in part.detail
    g.leftover_windows = [2, 3]
    assert part_of(judge(mode_named("stochastic"), r, allowance=cast), "graph").status == PASS


def test_read_step_graph_records_the_window_of_each_leftover_graph(tmp_path):
    step1, step, more = rooted("s1", "a, b"), rooted("st", "a, b, c"), rooted("st+", "a, b, c, x, y")
    files, marks, end = _dump_with_marks(tmp_path, [step1, step, step, more, step, step], [1, 2, 3, 4, 5])
    st = read_step_graph(files, marks, end)
    assert st is not None and st.leftover_graphs == 1 and st.leftover_windows == [3]
    assert GraphStats.from_dict(st.to_dict()).leftover_windows == [3]


def _linspace_legacy(migrated, legacy_env=None, created="f32", mg=None):
    """hunt33's mod_pair (bench/unseen/hunt33): under XLA_USE_BF16 the legacy run's ``torch.linspace`` in
    the model's forward was f32 on the device, so its step graph computed 0 of 5 matmuls in bf16 and two
    parameters became f32; the migrated run is bf16 everywhere, as the switch promises."""
    r = runs(migrated=migrated, lg=graph(bf16=0, f32=5), mg=mg if mg is not None else graph(bf16=5))
    r["legacy"].device_param_dtypes = {"bf16": 2, "f32": 2}
    r["legacy"].legacy_env = legacy_env or {"XLA_USE_BF16": "1"}
    r["legacy"].trace = Trace(
        events=[
            TraceEvent(Kind.CREATE, "/stage/legacy/nets.py", 14, "torch.linspace", result=created),
            TraceEvent(Kind.MEET, "/stage/legacy/nets.py", 15, "Tensor.add", operands=["bf16", "f32"], result="f32"),
        ]
    )
    return r


def test_a_legacy_run_that_made_f32_under_its_switch_is_no_step_by_step_baseline():
    """The legacy run left the switch's contract at a line of its own (an f32 tensor made on the device under
    XLA_USE_BF16), computed its matmuls in f32 from there, and the contract-faithful migration (all matmuls
    and parameters bf16) cannot match its first steps: INCONCLUSIVE naming that line, not FAIL. Without the
    f32 made under the switch, under XLA_DOWNCAST_BF16 (whose rule makes f64 f32), with an f32 matmul in the
    migrated graph, or drifting beyond the limit: FAIL, as before."""
    near = [x * (1 + 0.006 * (-1) ** i) for i, x in enumerate(LEGACY)]
    matches = part_of(judge(mode_named("stochastic"), _linspace_legacy(near)), "matches")
    assert matches.status == INCONCLUSIVE, matches.detail
    assert matches.figures["legacy_left_f32"] == ["nets.py:14 torch.linspace"]
    assert "made f32 on the device under its switch at nets.py:14 torch.linspace" in matches.detail
    assert "0 of 5 of its step graph's matmuls bf16, where the migrated run's 5 of 5 are" in matches.detail
    for r in (
        _linspace_legacy(near, created="bf16"),
        _linspace_legacy(near, legacy_env={"XLA_DOWNCAST_BF16": "1"}),
        _linspace_legacy(near, mg=graph(bf16=4, f32=1)),
        _linspace_legacy([x * 1.05 for x in LEGACY]),
    ):
        assert part_of(judge(mode_named("stochastic"), r), "matches").status == FAIL
