"""A Jupytext notebook kept as a ``.py`` file names a variable in a commented magic (BFM116).

Jupytext's percent and light formats (``# %%`` / ``# +`` cell markers, or a ``jupytext:``
header) write a notebook's magics as comments: ``%env XLA_USE_BF16=1`` is saved as ``# %env
XLA_USE_BF16=1``, ``!XLA_USE_BF16=1 python train.py`` as ``# !XLA_USE_BF16=1 python train.py``
(Jupytext documentation, "Jupyter magics": "magic commands are commented in the percent and light
formats"). Python reads a comment; Jupyter, opening the file as a notebook through Jupytext, runs
the magic, which sets the variable for the kernel or the command. So in such a file a comment
that is a magic naming a legacy variable is reported, never passed over (comments are otherwise
not findings: they set nothing).

VALID (not reported: a plain comment, or a file that is no Jupytext notebook)::

    # XLA_USE_BF16 used to be set here

INVALID (BFM116)::

    # %%
    # %env XLA_USE_BF16=1
"""

from __future__ import annotations

import io
import re
import tokenize

from .context import FileContext

_CELL_MARKER = re.compile(r"^# (%%|\+\s*$)|^#\s+jupytext:", re.M)
_MAGIC = re.compile(r"^#\s?(%env|%set_env|!)")


def report_commented_magics(ctx: FileContext, text: str) -> None:
    """BFM116 at each legacy variable a commented magic of ``text`` names, when ``text`` is a
    Jupytext notebook (see the module docstring)."""
    if _CELL_MARKER.search(text) is None:
        return
    names = sorted(ctx.rules.variables, key=len, reverse=True)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return
    for token in tokens:
        if token.type != tokenize.COMMENT or token.start[1] != 0:
            continue
        found = _MAGIC.match(token.string)
        if found is None:
            continue
        for name in names:
            at = token.string.find(name)
            if at >= 0:
                line = token.start[0]
                ctx.report_at("BFM116", line, at + 1, fixed=False, variable=name, magic=found.group(1))
                break
