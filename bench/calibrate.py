"""The calibration of `bf16-migrate verify`: a confusion matrix of its verdict on our own scripts.

Every case of ``bench/calibration/cases.toml`` is a legacy training script with its right
migration in each mode (verify must PASS) and wrong migrations (verify must FAIL); the script is
verified with ``verify_script(..., migrated_source=...)``, each migration's text given
(:meth:`Migration.source`). A case of our own keeps its texts in ``bench/calibration/<case>/``
(``train.py``, ``right/<mode>.py``, written by hand where the codemod's output is wrong for the
shape); a fixture case names its fixture and reads ``fixtures/<fixture>/train.py`` and the
goldens ``fixtures/<fixture>/expected/<mode>/train.py``, which tests/test_golden.py and
tests/test_trees.py hold equal to the codemod's output: there the calibration measures the
migration the codemod writes. A wrong
migration is data in cases.toml: a base (``legacy`` or a right migration) and exact text edits,
or ``delete_only`` (the codemod's FP32-reference rewrite). The verifies of one case hold the
machine-wide XLA lock (``--lock``, default ``/tmp/bfm-xla.lock``) while they run, so other XLA
jobs interleave.

Usage::

    python bench/calibrate.py                       # every case and migration (about an hour)
    python bench/calibrate.py --only grad_accum     # one case; --only grad_accum:right:amp for one migration
    python bench/calibrate.py --ci                  # the subset CI runs (tests/test_calibration.py)
    python bench/calibrate.py --rejudge             # the verdict again over the stored runs, no XLA
    python bench/calibrate.py --rejudge --as-kept-f32   # ... as if every migration kept f32 on purpose

Results go to ``bench/results/calibration.json`` (merged with earlier results, one entry per case
and migration: the verdict, its parts with their figures, and the runs' records without their
output), and the matrix to stdout in Markdown (the table of bench/RESULTS.md). ``--rejudge``
applies the current verdict code (:func:`bf16_migrate.verify.compare.judge`) to the stored runs:
how a change of a rule moves the matrix, without new runs (except the extra evidence a verify
gathers itself: the runs stored are those of its last round). ``--as-kept-f32`` judges every
stored run as verify judges a migration that keeps f32 the script asks for (``judge(...,
kept_f32=True, loss_f32=True)``: the drift alone, an f32 loss accepted), writing nothing: what
that door would let through were it opened for any migration.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "bench" / "calibration"
RESULTS = ROOT / "bench" / "results" / "calibration.json"
FIXTURES = ROOT / "fixtures"
LEGACY = "legacy"
PASS, FAIL = "PASS", "FAIL"


@dataclass(frozen=True)
class Edit:
    """An exact text replacement that makes a wrong migration from its base: ``old`` (which must
    occur exactly once in the text it is applied to) becomes ``new``."""

    old: str
    new: str


@dataclass
class Migration:
    """One migration of a case: ``label`` (``right:stochastic``, ``wrong:forward_f32``; a kind
    with several wrong migrations adds their ``name``, ``wrong:input_f32:model_input_f32``), the
    ``mode`` verify judges it in, the verdict it must get (``expected``) and where its text comes
    from, one of:

    - ``file``: a right migration (the case's ``right/<mode>.py``, or for a fixture case its golden
      ``fixtures/<fixture>/expected/<mode>/train.py``), or a wrong migration kept whole;
    - ``edits`` applied to ``base`` (a right migration of the case, or the legacy script when
      ``base`` is None), with ``why``: what the edits leave in f32 or in the wrong place;
    - neither: ``delete_only``, the codemod's FP32-reference rewrite of the legacy script.

    ``case`` names the case in error messages. ``same_as``: for a migration that differs in its
    text from a right one but computes the same (label ``same:<kind>``), that right migration: it
    must PASS and execute the same step graph (the hash of the graph of its last verified step
    equal to the right migration's), which shows that verify could not tell them apart because
    there is nothing to tell."""

    label: str
    mode: str
    expected: str
    case: str = ""
    file: Path | None = None
    base: Migration | None = None
    edits: tuple[Edit, ...] = ()
    why: str = ""
    same_as: Migration | None = None

    @property
    def base_label(self) -> str:
        """``legacy`` or the label of the right migration the edits apply to."""
        return self.base.label if self.base is not None else LEGACY

    def source(self, legacy: str) -> str:
        """The migrated text. ``legacy``: the text of the case's legacy script (the base of
        edits with ``base = "legacy"``, and what ``delete_only`` rewrites: the legacy writes
        removed and nothing added; for a script a launcher switched, the script itself: its
        launcher's export deleted). Raises ValueError, naming the case, the migration and the
        edit, when an edit's ``old`` does not occur exactly once in the text it applies to."""
        if self.file is not None:
            return self.file.read_text(encoding="utf-8")
        if self.edits:
            base = self.base.source(legacy) if self.base is not None else legacy
            return apply_edits(base, self.edits, f"[{self.case}] {self.label}", self.base_label)
        from bf16_migrate.python import migrate_source

        return migrate_source(legacy, "reference", "train.py").code


def apply_edits(text: str, edits: Sequence[Edit], where: str, base: str) -> str:
    """``text`` with ``edits`` applied in order, each ``old`` replaced by its ``new``. Raises
    ValueError (``<where>: edit <n> ... occurs <k> times in <base>``) when an ``old`` does not
    occur exactly once in the text the earlier edits left."""
    for n, edit in enumerate(edits, 1):
        count = text.count(edit.old)
        if count != 1:
            shown = repr(edit.old) if len(edit.old) <= 60 else repr(edit.old[:57]) + "..."
            raise ValueError(f"{where}: edit {n} (old {shown}) occurs {count} times in {base}, not exactly once")
        text = text.replace(edit.old, edit.new)
    return text


@dataclass
class Case:
    """A case of the suite: the shape it stands for, the steps and arguments of its verifies,
    ``root`` (the directory of its texts: ``bench/calibration/<case>``, or ``fixtures/<fixture>``
    for a case that names its ``fixture``), its migrations, and the labels CI runs."""

    name: str
    shape: str
    steps: int
    args: list[str]
    root: Path
    fixture: str | None = None
    migrations: list[Migration] = field(default_factory=list)
    ci: list[str] = field(default_factory=list)
    legacy_env: dict[str, str] = field(default_factory=dict)
    """The setting a launcher gives the legacy run (a script that sets none itself)."""

    @property
    def script(self) -> Path:
        """The legacy script: ``<root>/train.py``."""
        return self.root / "train.py"

    def right_file(self, mode: str) -> Path:
        """The right migration in ``mode``: the fixture's golden, or the case's ``right/<mode>.py``."""
        if self.fixture is not None:
            return self.root / "expected" / mode / "train.py"
        return self.root / "right" / f"{mode}.py"


_WRONG_KEYS = {"kind", "mode", "name", "file", "base", "edits", "why"}
WRONG, SAME = "wrong", "same"


def _wrong(spec: dict[str, Any], case: Case, suite: Path, several: bool, group: str = WRONG) -> Migration:
    """The wrong migration of ``spec`` (one entry of the case's ``wrong``), or with ``group``
    ``same`` one of its ``same`` (a text that computes what its base computes: expected PASS, with
    the base as ``same_as``); ``several``: its kind has others in the case, so its label adds its
    name. Raises ValueError (without the file's name) for a key it does not know, a missing name,
    base, edit or why (every wrong migration but ``delete_only`` has one; a ``same`` one needs a
    right migration as its base)."""
    kind = spec["kind"]
    unknown = sorted(set(spec) - _WRONG_KEYS)
    if unknown:
        raise ValueError(f"[{case.name}] {group} {kind}: unknown key(s) {', '.join(unknown)}")
    file = suite / case.name / spec["file"] if "file" in spec else None
    name = spec.get("name") or (file.stem if file is not None else None)
    if several and not name:
        raise ValueError(f"[{case.name}] {group} {kind}: several of this kind, each needs a name")
    label = f"{group}:{kind}:{name}" if several else f"{group}:{kind}"
    expected = PASS if group == SAME else FAIL
    migration = Migration(label, spec["mode"], expected, case.name, file, why=str(spec.get("why", "")))
    if group == SAME and (file is not None or spec.get("base", LEGACY) == LEGACY):
        raise ValueError(f"[{case.name}] {label}: a migration that computes the same is a right migration's edits")
    if file is not None:
        if not migration.why:
            raise ValueError(f"[{case.name}] {label}: a wrong migration kept as a file needs a why (why not edits)")
        return migration
    if "base" not in spec and "edits" not in spec:
        if kind != "delete_only":
            raise ValueError(f"[{case.name}] {label}: no file and no base with edits (only delete_only is made so)")
        return migration
    rights = {m.label: m for m in case.migrations if m.label.startswith("right:")}
    base = spec.get("base")
    if base != LEGACY and base not in rights:
        raise ValueError(f"[{case.name}] {label}: base {base!r} is neither {LEGACY!r} nor one of {', '.join(rights)}")
    migration.base = rights.get(base)
    migration.same_as = migration.base if group == SAME else None
    migration.edits = tuple(Edit(str(e["old"]), str(e["new"])) for e in spec.get("edits", []))
    if not migration.edits or not migration.why:
        raise ValueError(f"[{case.name}] {label}: a wrong migration made from a base needs edits and a why")
    for n, edit in enumerate(migration.edits, 1):
        if not edit.old or edit.old == edit.new:
            raise ValueError(f"[{case.name}] {label}: edit {n} changes nothing")
    return migration


def load_cases(path: Path = SUITE / "cases.toml", fixtures: Path = FIXTURES) -> list[Case]:
    """The cases of ``cases.toml``, in file order, each with its right migrations, then its wrong
    ones. A case's own texts are in ``<path's directory>/<case>/``, a fixture case's in
    ``<fixtures>/<fixture>/``. Raises ValueError (naming the file and the case, and the edit where
    one is at fault) for a text that does not exist, a wrong migration it cannot make (see
    :func:`_wrong`), an edit whose ``old`` does not occur exactly once in its base, two
    migrations with one label, or a ``ci`` label that names no migration."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cases = []
    for name, spec in data.items():
        fixture = spec.get("fixture")
        root = fixtures / fixture if fixture else path.parent / name
        case = Case(name, spec["shape"], int(spec["steps"]), [str(a) for a in spec.get("args", [])], root, fixture)
        case.legacy_env = {str(k): str(v) for k, v in spec.get("legacy_env", {}).items()}
        for mode in spec.get("right", []):
            case.migrations.append(Migration(f"right:{mode}", mode, PASS, name, case.right_file(mode)))
        try:
            for group in (WRONG, SAME):
                kinds = [w["kind"] for w in spec.get(group, [])]
                for wrong in spec.get(group, []):
                    several = kinds.count(wrong["kind"]) > 1
                    case.migrations.append(_wrong(wrong, case, path.parent, several, group))
            _check_texts(case)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        case.ci = list(spec.get("ci", []))
        unknown = [c for c in case.ci if c not in {m.label for m in case.migrations}]
        if unknown:
            raise ValueError(f"{path}: [{name}] ci names no migration: {', '.join(unknown)}")
        cases.append(case)
    return cases


def _check_texts(case: Case) -> None:
    """Every text ``case`` reads exists, its labels are distinct, and every migration made by
    edits can be made (each ``old`` once in its base). Raises ValueError naming the case."""
    for path in [case.script] + [m.file for m in case.migrations if m.file is not None]:
        if not path.is_file():
            raise ValueError(f"[{case.name}] {path} does not exist")
    labels = [m.label for m in case.migrations]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValueError(f"[{case.name}] two migrations are labelled {', '.join(twice)}")
    legacy = case.script.read_text(encoding="utf-8")
    for m in case.migrations:
        if m.edits:
            m.source(legacy)


@contextmanager
def xla_lock(path: str | None) -> Iterator[None]:
    """Hold the machine-wide XLA lock (``flock``) while the block runs; no lock for None."""
    if not path:
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


_DROPPED = ("tail", "step_end_s", "backwards_per_step", "hint", "median_step_time_s", "execute_count")


def _compact_run(run: dict[str, Any]) -> dict[str, Any]:
    """A run of a report with what re-judging needs: no output tail, step times or graph
    examples; of its dtype trace, how far it went (the findings are the entry's)."""
    out = {k: v for k, v in run.items() if k not in _DROPPED}
    if out.get("graph"):
        out["graph"] = {k: v for k, v in out["graph"].items() if k not in ("round_trip_examples", "frames")}
    if out.get("trace"):
        out["trace"] = {k: v for k, v in out["trace"].items() if k in ("end", "continued", "stop_step", "calls")}
    return out


def _dump(entries: list[dict[str, Any]]) -> str:
    """The results file: a JSON list, one entry per line."""
    return "[\n" + ",\n".join(json.dumps(e, sort_keys=True) for e in entries) + "\n]\n"


def verify_migration(case: Case, migration: Migration, lock: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """Verify one migration of ``case`` and return its entry: the verdict (``PASS``, ``FAIL``,
    ``INCONCLUSIVE`` or ``ERROR`` when a run could not be made), whether it is the expected one,
    the parts, notes, the runs and the wall time. ``kwargs`` go to ``verify_script``."""
    from bf16_migrate.verify import RunError, verify_script
    from bf16_migrate.verify.report import report_dict

    legacy = case.script.read_text(encoding="utf-8")
    started = time.monotonic()
    entry: dict[str, Any] = {"case": case.name, "migration": migration.label, "mode": migration.mode}
    if migration.same_as is not None:
        entry["same_as"] = migration.same_as.label
    with xla_lock(lock):
        try:
            report = verify_script(
                case.script,
                mode=migration.mode,
                steps=case.steps,
                script_args=case.args,
                legacy_env=case.legacy_env,
                migrated_source=migration.source(legacy),
                **kwargs,
            )
        except RunError as exc:
            entry.update(
                verdict="ERROR",
                error=exc.message,
                runs={n: _compact_run(r.to_dict()) for n, r in exc.runs.items()},
                trace_findings=[f.to_dict() for f in exc.findings],
            )
            report = None
    if report is not None:
        doc = report_dict(report)
        entry.update(
            verdict=doc.get("verdict", PASS if doc["passed"] else FAIL),
            parts=doc["parts"],
            notes=doc["notes"],
            steps=doc["steps"],
            runs={name: _compact_run(run) for name, run in doc["runs"].items()},
            rounds=doc.get("rounds"),
            trace_findings=doc.get("trace_findings", []),
            wall_verify_s=round(report.wall_time_s, 1),
        )
    entry["injected"] = injected_lines(case, migration, legacy)
    entry["expected"] = migration.expected
    entry["right"] = entry["verdict"] == migration.expected
    entry["wall_s"] = round(time.monotonic() - started, 1)
    return entry


def rejudge(entry: dict[str, Any], cases: list[Case], kept_f32: bool = False) -> dict[str, Any]:
    """The entry judged again by the current verdict code, over its stored runs (the compile
    allowance read again from the case's files); ``kept_f32``: as a migration that keeps f32 the
    script asks for, its loss among it (``judge``'s ``kept_f32`` and ``loss_f32``)."""
    from bf16_migrate.rules import mode_named
    from bf16_migrate.verify.allowance import compile_allowance
    from bf16_migrate.verify.compare import judge
    from bf16_migrate.verify.graphs import GraphStats
    from bf16_migrate.verify.records import RunRecord

    if entry["verdict"] == "ERROR":
        return entry
    runs = {}
    names = set(RunRecord.__dataclass_fields__)
    for name, run in entry["runs"].items():
        fields = {k: v for k, v in run.items() if k in names and k not in ("graph", "name")}
        fields["losses"] = [float(x) for x in run.get("losses") or []]
        rec = RunRecord(name=name, **fields)
        if run.get("graph"):
            rec.graph = GraphStats.from_dict(run["graph"])
        runs[name] = rec
    allowance = None
    for case in cases:
        for m in case.migrations:
            if (case.name, m.label) == (entry["case"], entry["migration"]):
                legacy = case.script.read_text(encoding="utf-8")
                allowance = compile_allowance(legacy, m.source(legacy))
    verdict = judge(
        mode_named(entry["mode"]),  # the stored entry names it
        runs,
        requested_steps=entry.get("steps"),
        allowance=allowance,
        kept_f32=kept_f32,
        loss_f32=kept_f32,
    )
    from bf16_migrate.verify.parts import Part

    for stored in entry.get("parts") or []:
        if stored["name"] == "trace" and verdict.parts and verdict.parts[0].passed:
            # the trace part is read from the runs' traces, which are not stored: kept as judged
            verdict.parts.append(Part("trace", stored["status"], stored["detail"], stored.get("figures") or {}))
    parts = [{"name": p.name, "status": p.status, "detail": p.detail, "figures": p.figures} for p in verdict.parts]
    status = verdict.status
    return {**entry, "verdict": status, "parts": parts, "notes": verdict.notes, "right": status == entry["expected"]}


def check_same(entries: list[dict[str, Any]]) -> None:
    """For each entry of a migration that computes what a right one does (``same_as``): whether
    its last verified step executed the right migration's graph (``same_graph``: the graph part's
    ``graph_hash``, the hash of the HLO text torch-xla dumps for the step, equal), and ``right``
    only when it PASSes with that same graph. An entry whose right migration has no stored run is
    not right yet."""
    by_key = {(e["case"], e["migration"]): e for e in entries}
    for e in entries:
        if not e.get("same_as"):
            continue
        other = by_key.get((e["case"], e["same_as"]))
        mine = _figure(e, "graph", "graph_hash")
        e["same_graph"] = other is not None and mine is not None and mine == _figure(other, "graph", "graph_hash")
        e["right"] = e["verdict"] == PASS and e["same_graph"]


def injected_lines(case: Case, migration: Migration, legacy: str) -> list[int] | None:
    """The lines of the case's legacy script (the file verify's findings name) where a wrong
    migration's edits are: each edit's new text in the wrong text (the line it starts on; an edit
    that deletes, the line after the deletion), placed in the legacy script through their
    difference, as the trace's findings are. None for a migration that is not wrong or is made by
    no edits (``delete_only``: its error is the cast it lacks, which has no line)."""
    from bf16_migrate.verify.trace_findings import LineMap

    if migration.expected != FAIL or not migration.edits:
        return None
    wrong = migration.source(legacy)
    base = migration.base.source(legacy) if migration.base is not None else legacy
    lines: list[int] = []
    text = base
    for edit in migration.edits:
        start = text.index(edit.old)
        text = text.replace(edit.old, edit.new)
        marker = edit.new.strip() or None
        if marker is not None and marker in wrong:
            start = wrong.index(marker)
        lines.append(wrong.count("\n", 0, min(start, len(wrong))) + 1)
    mapping = LineMap(wrong, legacy)
    return sorted({mapping.place(n)[0] for n in lines})


def _trace_lines_of(finding: dict[str, Any]) -> set[int]:
    """The lines of the legacy script a finding's evidence names (``train.py:12: ...``)."""
    out = set()
    for line in finding.get("evidence") or []:
        head = line.split(":", 2)
        if len(head) > 2 and head[1].isdigit():
            out.add(int(head[1]))
    return out


def trace_named(entry: dict[str, Any]) -> str:
    """How the trace did on one migration: ``line`` (a finding at an injected line), ``chain`` (an
    injected line among a finding's evidence), ``finding`` (a finding elsewhere: a wrong migration
    whose error has no line of its own, ``delete_only``), ``none``; for a right or same migration
    ``clean`` or ``finding`` (a finding that counts: a false one)."""
    counted = [
        f for f in entry.get("trace_findings") or [] if not f.get("excused_by") and f["path"].endswith("train.py")
    ]
    if entry["expected"] != FAIL:
        return "clean" if not counted else "finding"
    injected = set(entry.get("injected") or [])
    if injected and any(f["line"] in injected for f in counted):
        return "line"
    if injected and any(_trace_lines_of(f) & injected for f in counted):
        return "chain"
    return "finding" if counted else "none"


def trace_summary(entries: list[dict[str, Any]]) -> str:
    """The trace's calibration in Markdown: per kind of wrong migration, how many it names at the
    injected line, in a finding's evidence, by some finding, or not at all; over the right and
    same ones, how many have no finding that counts (its precision), and the false findings."""
    kinds: dict[str, dict[str, int]] = {}
    for e in entries:
        if e["expected"] != FAIL or "trace_findings" not in e:
            continue
        kind = e["migration"].split(":")[1]
        row = kinds.setdefault(kind, {"n": 0, "line": 0, "chain": 0, "finding": 0, "none": 0})
        row["n"] += 1
        row[trace_named(e)] += 1
    lines = [
        "| wrong kind | migrations | named at the injected line | in a finding's evidence | another finding | none |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, row in kinds.items():
        lines.append(f"| {kind} | {row['n']} | {row['line']} | {row['chain']} | {row['finding']} | {row['none']} |")
    good = [e for e in entries if e["expected"] != FAIL and "trace_findings" in e]
    false = [e for e in good if trace_named(e) == "finding"]
    lines += [
        "",
        f"Right and same migrations with no trace finding that counts: {len(good) - len(false)} of {len(good)}.",
    ]
    for e in false:
        for f in e["trace_findings"]:
            if not f.get("excused_by"):
                lines.append(f"- {e['case']} {e['migration']}: {f['code']} line {f['line']}: {f['message'][:140]}")
    excused = sum(1 for e in good for f in e["trace_findings"] if f.get("excused_by"))
    if excused:
        lines.append(f"- deliberate f32 islands the migration reported, kept: {excused}")
    return "\n".join(lines) + "\n"


def _cell(entry: dict[str, Any], part: str) -> str:
    for p in entry.get("parts") or []:
        if p["name"] == part:
            return {"PASS": "pass", "FAIL": "**FAIL**", "INCONCLUSIVE": "?"}.get(p["status"], p["status"])
    return "-"


def _figures(entry: dict[str, Any]) -> str:
    """The figures that decided: matches' onset and drift, the control, graph's matmuls."""
    bits = []
    for p in entry.get("parts") or []:
        f = p.get("figures") or {}
        if p["name"] == "matches":
            if "median_rel" in f:
                bits.append(f"median {_num(f['median_rel'])}")
            if f.get("precision_gap") is not None:
                bits.append(f"gap {_num(f['precision_gap'])}")
            if f.get("control_passes_onset") is not None:
                bits.append("control " + ("passes" if f["control_passes_onset"] else "fails"))
        if p["name"] == "precision" and f.get("matmuls"):
            bits.append(f"{f.get('matmuls_bf16')}/{f['matmuls']} matmuls bf16")
        if p["name"] == "matches" and f.get("decided_by"):
            bits.append(f"decided by {f['decided_by']}")
        if p["name"] == "trains" and f.get("relative"):
            bits.append("trains judged against the comparison run")
        if p["name"] == "graph" and "compiles" in f:
            bits.append(f"compiles {f['compiles']} vs {f['compiles_baseline']}")
    if len(entry.get("rounds") or []) > 1:
        bits.append("steps " + " then ".join(map(str, entry["rounds"])))
    if entry.get("same_as"):
        bits.append(
            f"step graph {'the same as' if entry.get('same_graph') else 'NOT the same as'} {entry['same_as']}'s"
        )
    if entry["verdict"] == "ERROR":
        bits.append(entry.get("error", "")[:60])
    return ", ".join(bits)


def _num(x: Any) -> str:
    return f"{x:.2g}" if isinstance(x, (int, float)) else str(x)


def _figure(entry: dict[str, Any], part: str, key: str) -> Any:
    for p in entry.get("parts") or []:
        if p["name"] == part:
            return (p.get("figures") or {}).get(key)
    return None


def summary(entries: list[dict[str, Any]]) -> str:
    """What the stored runs measured, per mode over the right migrations: the median relative
    difference from the comparison run against its drift limit, the precision gap, how many
    needed the graphs or more steps to decide, and the compilations against the itemized
    allowance (migrated minus legacy); then the wrong migrations' deciding parts."""
    lines = []
    for mode in dict.fromkeys(e["mode"] for e in entries):
        right = [
            e
            for e in entries
            if e["mode"] == mode and e["expected"] == PASS and e.get("parts") and not e.get("same_as")
        ]
        if not right:
            continue
        pairs = [(_figure(e, "matches", "median_rel"), _figure(e, "matches", "drift_limit")) for e in right]
        med = [m for m, _lim in pairs if isinstance(m, (int, float))] or [math.nan]
        num = (int, float)
        ratio = [m / lim for m, lim in pairs if isinstance(m, num) and isinstance(lim, num) and lim > 0]
        gaps = [g for g in (_figure(e, "matches", "precision_gap") for e in right) if isinstance(g, float)]
        extra = [
            (_figure(e, "graph", "compiles") or 0) - (_figure(e, "graph", "compiles_baseline") or 0) for e in right
        ]
        allowed = [_figure(e, "graph", "compile_allowance") or 0 for e in right]
        graphs = sum(1 for e in right if _figure(e, "matches", "decided_by") == "graphs")
        more = sum(1 for e in right if len(e.get("rounds") or []) > 1)
        lines.append(
            f"- right {mode} ({len(right)}): median rel. diff {_num(min(med))}-{_num(max(med))}, at most "
            f"{_num(max(ratio, default=0))} of its drift limit; precision gap {_num(min(gaps, default=0))}-"
            f"{_num(max(gaps, default=0))}; decided by the graphs {graphs}, by more steps {more}; compilations "
            f"beyond the legacy run's {min(extra)}-{max(extra)}, allowed {min(allowed)}-{max(allowed)}, "
            f"over the allowance {sum(1 for x, a in zip(extra, allowed) if x > a)}"
        )
    wrong = [e for e in entries if e["expected"] == FAIL and e.get("parts")]
    failing: dict[str, int] = {}
    for e in wrong:
        for p in e["parts"]:
            if p["status"] == FAIL:
                failing[p["name"]] = failing.get(p["name"], 0) + 1
    if wrong:
        parts = ", ".join(f"{name} {n}" for name, n in failing.items())
        lines.append(f"- wrong ({len(wrong)}): the parts that FAIL them (a migration may fail several): {parts}")
    return "\n".join(lines) + "\n"


def matrix(entries: list[dict[str, Any]]) -> str:
    """The confusion matrix in Markdown: the summary counts, then one row per case and migration
    with the verdict of each part and the figures behind it."""
    right = [e for e in entries if e["expected"] == PASS and not e.get("same_as")]
    wrong = [e for e in entries if e["expected"] == FAIL]
    same = [e for e in entries if e.get("same_as")]

    def count(group: list[dict[str, Any]], verdict: str) -> int:
        return sum(1 for e in group if e["verdict"] == verdict)

    lines = [
        "| | verdict PASS | verdict FAIL | INCONCLUSIVE | ERROR |",
        "|---|---:|---:|---:|---:|",
        f"| right migration ({len(right)}) | {count(right, PASS)} | {count(right, FAIL)} (false FAIL) "
        f"| {count(right, 'INCONCLUSIVE')} | {count(right, 'ERROR')} |",
        f"| wrong migration ({len(wrong)}) | {count(wrong, PASS)} (false PASS) | {count(wrong, FAIL)} "
        f"| {count(wrong, 'INCONCLUSIVE')} | {count(wrong, 'ERROR')} |",
        f"| same computation as a right migration ({len(same)}) | {count(same, PASS)} | {count(same, FAIL)} "
        f"| {count(same, 'INCONCLUSIVE')} | {count(same, 'ERROR')} |",
        "",
        "| case | migration | mode | verdict | runs | trains | precision | matches | graph | trace | figures | wall |",
        "|---|---|---|---|---|---|---|---|---|---|---|---:|",
    ]
    for e in entries:
        verdict = e["verdict"] if e["right"] else f"**{e['verdict']}** (want {e['expected']})"
        cells = " | ".join(_cell(e, part) for part in ("runs", "trains", "precision", "matches", "graph", "trace"))
        lines.append(
            f"| {e['case']} | {e['migration']} | {e['mode']} | {verdict} | {cells} | {_figures(e)} | {e['wall_s']} s |"
        )
    return "\n".join(lines) + "\n"


def _selected(cases: list[Case], only: list[str], ci: bool) -> list[tuple[Case, Migration]]:
    out = []
    for case in cases:
        for m in case.migrations:
            if ci and m.label not in case.ci:
                continue
            if only and not any(sel in (case.name, f"{case.name}:{m.label}") for sel in only):
                continue
            out.append((case, m))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="CASE[:MIGRATION]")
    parser.add_argument("--ci", action="store_true", help="only the migrations CI runs")
    parser.add_argument("--rejudge", action="store_true", help="judge the stored runs again; run nothing")
    parser.add_argument(
        "--as-kept-f32",
        action="store_true",
        help="with --rejudge: judge every run as a migration keeping f32 on purpose; write nothing",
    )
    parser.add_argument("--lock", default="/tmp/bfm-xla.lock", help="flock file held around each verify ('' for none)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--write-md",
        type=Path,
        metavar="FILE",
        help="also put the matrix into FILE (bench/RESULTS.md) between its calibration markers",
    )
    args = parser.parse_args()
    if args.as_kept_f32 and (not args.rejudge or args.write_md is not None):
        parser.error("--as-kept-f32 goes with --rejudge, and writes no matrix into a file")
    stored: dict[str, dict[str, Any]] = {}
    if args.results.is_file():
        stored = {f"{e['case']}:{e['migration']}": e for e in json.loads(args.results.read_text())}
    order = [f"{c.name}:{m.label}" for c, m in _selected(load_cases(), [], False)]
    if args.rejudge:
        cases = load_cases()
        stored = {key: rejudge(e, cases, args.as_kept_f32) for key, e in stored.items()}
    else:
        selected = _selected(load_cases(), args.only, args.ci)
        for name in dict.fromkeys(case.name for case, _m in selected):
            with xla_lock(args.lock):  # one case's verifies at a time, so other XLA jobs interleave
                for case, m in [(c, m) for c, m in selected if c.name == name]:
                    entry = verify_migration(case, m)
                    stored[f"{case.name}:{m.label}"] = entry
                    mark = "ok" if entry["right"] else "WRONG"
                    print(f"{case.name} {m.label}: {entry['verdict']} ({mark}, {entry['wall_s']} s)", file=sys.stderr)
                    args.results.parent.mkdir(parents=True, exist_ok=True)
                    args.results.write_text(_dump([stored[k] for k in order if k in stored]))
    entries = [stored[k] for k in order if k in stored]
    check_same(entries)
    if args.rejudge and not args.as_kept_f32:
        args.results.write_text(_dump(entries))
    table = matrix(entries) + "\n" + summary(entries) + "\n" + trace_summary(entries)
    sys.stdout.write(table)
    if args.write_md is not None:
        write_between_markers(args.write_md, table)
    return 0 if all(e["right"] for e in entries) else 1


BEGIN, END = "<!-- calibration matrix: bench/calibrate.py --write-md -->", "<!-- end of calibration matrix -->"


def write_between_markers(path: Path, table: str) -> None:
    """Replace the text between the calibration markers of ``path`` by ``table``. Raises
    ValueError when the markers are missing."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path}: no calibration markers ({BEGIN} ... {END})")
    path.write_text(text[: start + len(BEGIN)] + "\n" + table + text[end:], encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
