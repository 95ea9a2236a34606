"""``verify --against REV``: the legacy text of an already migrated script, read from git.

Runs ``git`` read-only (``rev-parse``, ``show``) in the script's directory; no network, nothing
written. Every failure is a :class:`~bf16_migrate.verify.records.RunError` with what to try (the
CLI maps it to exit code 2).
"""

from __future__ import annotations

import io
import subprocess
import tokenize
from pathlib import Path

from .records import RunError

__all__ = ["legacy_source_at"]


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", *args], cwd=str(cwd), capture_output=True, stdin=subprocess.DEVNULL, timeout=60
        )
    except FileNotFoundError as exc:
        raise RunError("--against needs git, which is not on PATH", hint="install git, or verify the legacy file itself") from exc
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - a local git does not hang
        raise RunError(f"git {' '.join(args)} did not answer in 60 s") from exc


def legacy_source_at(script: Path, rev: str) -> tuple[str, str]:
    """The text of ``script`` at git revision ``rev``, and the commit it resolved to (hex).

    ``script``: a path inside a git work tree (the migrated file; it need not be committed).
    The blob is decoded as Python would (coding cookie, BOM; UTF-8 by default).

    Raises :class:`RunError` when git is missing, ``script`` is not inside a git work tree,
    ``rev`` names no commit, the path does not exist at ``rev``, or the text cannot be decoded.
    """
    script = Path(script).resolve()
    where = script.parent
    top = _git(where, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise RunError(
            f"--against {rev}: {script.parent} is not inside a git repository",
            hint="run verify from the repository's work tree, or drop --against and pass the legacy file itself",
        )
    root = Path(top.stdout.decode().strip()).resolve()
    try:
        rel = script.relative_to(root).as_posix()
    except ValueError:  # pragma: no cover - rev-parse answered for this directory
        raise RunError(f"--against {rev}: {script} is outside the work tree {root}")
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if commit.returncode != 0:
        raise RunError(
            f"--against {rev}: no such commit in {root}",
            hint="name a commit, branch or tag (e.g. HEAD~1, the commit before the migration)",
        )
    sha = commit.stdout.decode().strip()
    blob = _git(root, "show", f"{sha}:{rel}")
    if blob.returncode != 0:
        raise RunError(
            f"--against {rev}: {rel} does not exist at {rev} ({sha[:12]})",
            hint="was the file renamed or added after that commit? pass the revision where the legacy file exists",
        )
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(blob.stdout).readline)
        text = blob.stdout.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise RunError(f"--against {rev}: {rel} at {rev} cannot be decoded: {exc}") from exc
    if encoding == "utf-8-sig" and text.startswith("\ufeff"):  # pragma: no cover - decode drops it
        text = text[1:]
    return text, sha
