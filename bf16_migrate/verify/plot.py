"""``verify --plot FILE.png``: the loss curves of every run, and the per-step relative
difference of the migrated run against its comparison run.

matplotlib (the ``xla`` extra) is imported only here, with the non-interactive Agg backend, so
no display is needed and the rewrite path never loads it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .compare import rel_diffs
from .parts import Status
from .records import LEGACY, MIGRATED, REFERENCE

if TYPE_CHECKING:  # pragma: no cover
    from . import VerifyReport

__all__ = ["check_matplotlib", "plot_report"]

_STYLE = {
    LEGACY: dict(label="legacy (switch in force)", color="#d62728", marker="o", linestyle="-"),
    MIGRATED: dict(label="migrated", color="#1f77b4", marker="x", linestyle="--"),
    REFERENCE: dict(label="FP32 reference", color="#7f7f7f", marker=".", linestyle=":"),
}


def check_matplotlib() -> str | None:
    """None when matplotlib imports, else the message to show (checked before the runs, so
    that a long verify does not end with a missing dependency)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "--plot needs matplotlib: pip install 'bf16-migrate[xla]' (or pip install matplotlib)"
    return None


def plot_report(report: VerifyReport, path: Path) -> Path:
    """Write a PNG (``path``; 1000 x 750 px at 100 dpi) with two panels: the loss of each run
    per optimizer step, and the relative difference of the migrated loss against the
    comparison run (log scale; identical steps drawn at the bottom edge). Returns ``path``.
    Raises ImportError without matplotlib and OSError when the file cannot be written."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, (ax, axr) = plt.subplots(
        2, 1, figsize=(10, 7.5), dpi=100, sharex=True, gridspec_kw={"height_ratios": [3, 1.4]}
    )
    _plot_losses(ax, report)
    if report.verdict.rel:
        _plot_rel(axr, report)
    axr.set_xlabel("optimizer step")
    from matplotlib.ticker import MaxNLocator

    axr.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def _plot_losses(ax: Any, report: VerifyReport) -> None:
    """The upper panel: each run's loss per step (non-finite losses left out), the verdict's
    parts in its lower left corner."""
    v = report.verdict
    for name in (REFERENCE, LEGACY, MIGRATED):
        r = report.runs.get(name)
        if r is None or not r.losses:
            continue
        steps = list(range(1, len(r.losses) + 1))
        label = _STYLE[name]["label"] + (" [comparison]" if name == v.baseline else "")
        style = {k: val for k, val in _STYLE[name].items() if k != "label"}
        ax.plot(steps, [x if math.isfinite(x) else float("nan") for x in r.losses], label=label, markersize=4, **style)
    ax.set_ylabel("loss")
    verdict = Status.PASS if report.passed else Status.FAIL
    shown_name = f"{report.script.parent.name}/{report.script.name}"
    ax.set_title(f"bf16-migrate verify {shown_name} - mode {report.mode} - {verdict}")
    parts = "  ".join(f"{p.name} {p.status}" for p in v.parts)
    ax.text(0.01, 0.02, parts, transform=ax.transAxes, fontsize=8, family="monospace", va="bottom")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")


def _plot_rel(axr: Any, report: VerifyReport) -> None:
    """The lower panel (log scale): the migrated run's relative difference per step against
    the comparison run (identical steps at the floor, in green), the control (the other
    precision against the same run) and the drift limit."""
    from matplotlib.lines import Line2D

    v = report.verdict
    ctrl_all: list[float] = []
    # the control: how far the other precision is from the same comparison run
    other = report.runs.get(LEGACY if v.baseline == REFERENCE else REFERENCE)
    base_run = report.runs.get(v.baseline or "")
    if other is not None and base_run is not None and other is not base_run:
        ctrl_all = rel_diffs(other.losses, base_run.losses)
    finite = [r for r in list(v.rel) + ctrl_all if math.isfinite(r) and r > 0]
    floor = min(finite) / 10 if finite else 1e-6
    shown = [r if r > 0 else floor for r in v.rel]
    colors = [_STYLE[MIGRATED]["color"] if r > 0 else "#2ca02c" for r in v.rel]
    if other is not None and other.losses and base_run is not None and other is not base_run:
        ctrl = [r if r > 0 else floor for r in ctrl_all]
        label = "full-bf16 legacy (control)" if v.baseline == REFERENCE else "FP32 reference (control)"
        axr.plot(range(1, len(ctrl) + 1), ctrl, color="#7f7f7f", marker=".", linestyle=":", linewidth=1, label=label)
    axr.scatter(range(1, len(shown) + 1), shown, c=colors, s=14, zorder=3)
    proxies = [
        Line2D([], [], color=_STYLE[MIGRATED]["color"], marker="o", linestyle="", markersize=4, label="migrated"),
        Line2D(
            [],
            [],
            color="#2ca02c",
            marker="o",
            linestyle="",
            markersize=4,
            label="migrated, identical step (drawn at the floor)",
        ),
    ]
    axr.set_yscale("log")
    base = {LEGACY: "legacy", REFERENCE: "FP32 ref"}.get(v.baseline or "", "?")
    axr.set_ylabel(f"rel. diff vs {base}")
    matches = v.part("matches")
    limit = matches.figures.get("drift_limit") if matches is not None else None
    if limit:
        axr.axhline(limit, color="#ff7f0e", linestyle="--", linewidth=1, label=f"median limit {limit:.2g}")
    handles, _labels = axr.get_legend_handles_labels()
    axr.legend(handles=handles + proxies, loc="upper left", fontsize=7, ncol=2, framealpha=0.9)
    top = max([r for r in list(v.rel) + ctrl_all if math.isfinite(r)] + [limit or 0, floor])
    axr.set_ylim(floor / 2, top * 300)  # room above the points for the legend
    axr.grid(True, alpha=0.3, which="both")
