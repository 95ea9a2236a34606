"""One shell text read for a carrier: the passes run in order. The shell carrier reads a whole
script with it; the Dockerfile, notebook and YAML carriers the shell they hold (``RUN``/``CMD``,
``!`` lines, ``run:`` blocks).

The walk (:func:`.walk.read_fragment`) gives the plain data (:class:`~.parsed.ParsedFragment`);
:func:`.reach.link` which settings reach which launch; :func:`.render.edits` the edits of the
plan's decisions; :func:`.reach.sr_covered` whether a stochastic-rounding setting is in force.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

from ..model import Analysis, Decision, Edit
from . import reach, render
from .inline import inline_edits
from .parsed import EntryData, ParsedFragment
from .walk import read_fragment


class ShellFragment:
    """Analyse one shell text (a script, or a fragment of another file) into ``analysis``:
    its entries, launches (with the entries that reach them), includes and notes.

    ``pos`` maps a character offset of ``text`` to the 1-based (line, col) reported in the
    host file; ``embedded`` fragments report parse errors as diagnostics instead of raising
    (``ok`` is then False); ``base`` is where ``text`` starts in the host file (characters);
    ``one_line``: the text is one line of its host; ``ipython``: a notebook's ``!`` line
    (:mod:`.inline`: what migrated ``python -c`` code can be written back there);
    ``batch``: a whole script, whose ``#SBATCH`` directives are read (:mod:`.slurm`).
    Raises :class:`~..model.CarrierError` for a script that does not parse."""

    def __init__(
        self,
        text: str,
        path: str,
        analysis: Analysis,
        pos: Callable[[int], tuple[int, int]] | None = None,
        embedded: bool = False,
        base: int = 0,
        one_line: bool = False,
        ipython: bool = False,
        batch: bool = False,
    ) -> None:
        self.analysis = analysis
        self.parsed: ParsedFragment = read_fragment(
            text, path, analysis, pos, embedded, base, one_line=one_line, ipython=ipython, batch=batch
        )
        if self.parsed.ok:
            reach.apply_reach(reach.link(self.parsed, analysis.launches), analysis)

    @property
    def text(self) -> str:
        """The fragment's text."""
        return self.parsed.source.text

    @property
    def ok(self) -> bool:
        """False for an embedded fragment that does not parse (nothing was read from it)."""
        return self.parsed.ok

    @property
    def entries(self) -> list[int]:
        """The fragment's entries: ids in the analysis."""
        return self.parsed.entries

    @property
    def launches(self) -> list[int]:
        """The fragment's launches: indices into the analysis's launches."""
        return self.parsed.launches

    @property
    def entry_data(self) -> Mapping[int, EntryData]:
        """Entry id -> where the entry lives in the tree (:class:`~.parsed.EntryData`)."""
        return self.parsed.entry_data

    def sr_covered(self, scope: Hashable) -> bool:
        """True when a ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` setting of this fragment is in force
        wherever ``scope`` is (:func:`.reach.sr_covered`)."""
        return reach.sr_covered(self.parsed.sr_scopes, scope)

    def edits(self, decisions: Mapping[int, Decision]) -> list[Edit]:
        """The edits (character offsets of ``text``) that carry out ``decisions`` for this
        fragment's entries (:func:`.render.edits`), and write the migrated code of its ``python -c``
        launches (:attr:`~..model.Analysis.inline_code`, :func:`.inline.inline_edits`)."""
        return render.edits(self.parsed, decisions) + inline_edits(self.parsed, self.analysis.inline_code)
