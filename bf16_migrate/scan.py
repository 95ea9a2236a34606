"""Paths -> the files to look at, each with its kind.

Directories are walked recursively (version-control internals, virtual environments, caches
(:data:`SKIP_HIDDEN`), ``__pycache__``, ``node_modules`` and ``*.egg-info`` packaging metadata are
skipped; every other hidden directory is walked: ``.ci/``, ``.vscode/``, ``.github/`` hold
launchers; ``--exclude`` globs apply to the name or the path relative to the argument, of files
and of directories, whose whole content is then skipped; a directory that cannot be listed is a
candidate with a ``problem``).
A byte prefilter (:mod:`bf16_migrate.prefilter`: binary and UTF-16 files included, a large tree
read in two processes) keeps only files that name a legacy variable. Only regular files are
opened: a FIFO, device or socket of a kind bf16-migrate handles, a dangling symlink or a symlink
loop is a candidate with a ``problem`` (reported as that file's error), never read. Our own
temporaries (``.NAME.PID.RANDOM.bf16-migrate``) are skipped. Kinds come from the name (``*.py``,
``*.sh``/``*.bash``, ``Dockerfile*``, ``*.yaml``/``*.yml``,
``.env``/``*.env``, ``*.ipynb``, documentation) or, for an extensionless file, from its ``#!``
line. Every other text file that names a variable is a candidate too (``"unsupported"``): the
tool is never silent about a file that names a legacy variable.
"""

from __future__ import annotations

import errno
import fnmatch
import operator
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .bounds import PROJECT_MARKERS as PROJECT_MARKERS  # re-exported: the project is found there
from .bounds import project_dir as project_dir
from .bounds import project_root as project_root
from .carriers import REGISTRY, CarrierError, analyze, for_kind
from .prefilter import LEGACY_MARKERS as LEGACY_MARKERS  # re-exported: tests/test_rules_source.py reads it here
from .prefilter import mentioning, mentions_legacy
from .shebang import SHELL_INTERPRETERS as SHELL_INTERPRETERS  # re-exported
from .shebang import shebang_kind

SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", ".venv", "build", "dist"}


class ScanError(Exception):
    """A path given on the command line does not exist (the message names it)."""


@dataclass(frozen=True)
class Candidate:
    """A file to process: ``kind`` is ``"python"``, a carrier kind (``"shell"``,
    ``"dockerfile"``, ``"yaml"``, ``"dotenv"``, ``"notebook"``: see :mod:`bf16_migrate.carriers`),
    ``"docs"`` (documentation: reported, BFM091) or ``"unsupported"`` (a file that names a
    legacy variable but whose kind bf16-migrate does not rewrite, e.g. a Makefile, a TOML or
    jsonnet file, an unknown extension: reported, BFM090). See :mod:`bf16_migrate.mentions`."""

    path: Path
    kind: str
    problem: str | None = None
    """Why the file cannot be read (not a regular file, a symlink loop): reported, never opened."""


SHELL_SUFFIXES = {".sh", ".bash", ".zsh", ".slurm", ".sbatch", ".pbs", ".qsub"}


@dataclass(frozen=True)
class FileNames:
    """How a carrier's files are named: by ``suffix`` (``.sh``), or by the whole name (``names``,
    exact; ``prefixes``; ``endings``). Suffixes are tried before documentation, names after it
    (``Dockerfile.md`` is documentation)."""

    suffixes: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    endings: tuple[str, ...] = ()

    def by_name(self, name: str) -> bool:
        return name in self.names or name.startswith(self.prefixes) or name.endswith(self.endings)


CARRIER_FILES: dict[str, FileNames] = {
    "shell": FileNames(suffixes=frozenset(SHELL_SUFFIXES)),
    "notebook": FileNames(suffixes=frozenset({".ipynb"})),
    "yaml": FileNames(suffixes=frozenset({".yaml", ".yml"})),
    "dockerfile": FileNames(
        prefixes=("Dockerfile", "Containerfile"), endings=(".dockerfile", ".Dockerfile", ".containerfile")
    ),
    "dotenv": FileNames(names=frozenset({".env", "env.list"}), prefixes=(".env.",), endings=(".env",)),
    "vscode": FileNames(names=frozenset({"launch.json"})),  # VS Code's .vscode/launch.json
    "procfile": FileNames(names=frozenset({"Procfile"}), prefixes=("Procfile.",)),  # Procfile.dev
    "makefile": FileNames(names=frozenset({"Makefile", "makefile", "GNUmakefile"}), suffixes=frozenset({".mk"})),
}
"""The file names of each carrier kind (:data:`bf16_migrate.carriers.REGISTRY`), in the order
they are tried; a shell script without a suffix is also known by its ``#!`` line."""
# Files that can carry an environment setting but that bf16-migrate does not parse: reported.
UNSUPPORTED_SUFFIXES = {".cfg", ".ini", ".toml", ".json"}
UNSUPPORTED_NAMES: tuple[str, ...] = ()
# Documentation: prose that may tell readers to set a variable (reported, never rewritten).
DOC_SUFFIXES = {".md", ".mdx", ".rst", ".txt", ".html", ".htm", ".adoc"}
DOC_NAMES = ("README", "CHANGELOG", "CHANGES", "NEWS", "HISTORY")  # extensionless documentation
SKIP_HIDDEN = frozenset(
    {
        *(".git", ".hg", ".svn", ".bzr", ".jj"),  # version control's own data
        *(".tox", ".nox", ".venv", ".direnv", ".eggs", ".pixi", ".conda"),  # environments and their packages
        *(".cache", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".pytype", ".pyre"),  # caches
        ".ipynb_checkpoints",  # Jupyter's own copies of the notebooks beside it
    }
)
"""The hidden directories a walk passes over: tool-managed data, never the project's launchers.
Any other hidden directory is walked (``.ci/run.sh``, ``.vscode/launch.json``, ``.idea/``): a file
that names a legacy variable is never passed over without a finding."""


def skips_directory(name: str) -> bool:
    """Whether a directory walk passes over a directory named ``name`` (:data:`SKIP_DIRS`,
    :data:`SKIP_HIDDEN`, ``*.egg-info``)."""
    return name in SKIP_DIRS or name in SKIP_HIDDEN or name.endswith(".egg-info")


def kind_of(path: Path) -> str | None:
    """The kind of ``path`` by its name, extension or shebang; None for a file of no known
    kind (a directory walk reports it as ``"unsupported"`` when it names a variable)."""
    return _kind_of_name(path.name, path)


def _suffix(name: str) -> str:
    """``PurePath(name).suffix``, without building a path."""
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""


def _kind_of_name(name: str, path: Path | str) -> str | None:
    """:func:`kind_of` for the file ``path`` (a Path or a str) whose last part is ``name``."""
    suffix = _suffix(name)
    if suffix in (".py", ".pyi"):
        return "python"
    for kind, files in CARRIER_FILES.items():
        if suffix in files.suffixes:
            return kind
    if suffix in DOC_SUFFIXES or (not suffix and name.startswith(DOC_NAMES)):
        return "docs"  # before the carriers known by name: Dockerfile.md is documentation
    for kind, files in CARRIER_FILES.items():
        if files.by_name(name):
            return kind
    if suffix in UNSUPPORTED_SUFFIXES or name.startswith(UNSUPPORTED_NAMES):
        return "unsupported"
    if not suffix:
        return shebang_kind(Path(path))
    return None


def _problem(path: Path) -> str | None:
    """Why ``path`` must not be opened (a special file, a symlink loop, a dangling symlink), or
    None for a regular file (a symlink is followed)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop"
        if os.path.islink(path):
            return f"dangling symlink to {os.readlink(path)}"
        return exc.strerror
    if stat.S_ISREG(info.st_mode):
        return None
    from .commit import describe_file_type

    return f"not a regular file ({describe_file_type(info.st_mode)}); not read"


_name = operator.attrgetter("name")


def _files(
    root: Path,
    exclude: tuple[str, ...] = (),
    special: list[Candidate] | None = None,
    ignore=None,
    recursive: bool = True,
):
    """The regular files under the directory ``root`` that discovery looks at, as str paths, in
    the order of a top-down ``os.walk`` with sorted names (a directory's files, then its
    subdirectories). Built on ``os.scandir``, whose entries know their type without a
    ``stat`` call (https://docs.python.org/3/library/os.html#os.scandir): only a symlink or an
    entry of another type is ``stat``-ed. Skips, excludes, ``ignore`` and ``special``: as
    :func:`walk`. Not ``recursive``: the files of ``root`` itself only."""
    top = os.fspath(root)
    applies = getattr(ignore, "applies", None)
    stack: list[tuple[str, str, bool | None]] = [(top, "", None)]
    while stack:
        directory, base, above = stack.pop()
        entries = _sorted_entries(directory)
        if entries is None:  # reported, never passed over in silence: it may hold a launcher
            if special is not None:
                special.append(Candidate(Path(directory), "unsupported", _unreadable_directory(directory)))
            continue
        subdirs = []
        # per file, only where a .gitignore applies (GitIgnore.applies: once per directory)
        # (an entry the .gitignore files above cannot reach, directory or file, is not asked about)
        check = ignore is not None and (applies is None or applies(directory, {entry.name for entry in entries}, above))
        asked = ignore if check else None
        for entry in entries:
            if _is_dir(entry):
                if recursive and _walked_into(entry, base, exclude, asked):
                    subdirs.append((entry.path, base + entry.name + "/", check))
            elif _looked_at(entry, base, exclude, asked, special):
                yield entry.path
        stack.extend(reversed(subdirs))


def _sorted_entries(directory: str) -> list[os.DirEntry] | None:
    """The entries of ``directory`` sorted by name, or None when it cannot be read."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=_name)
    except OSError:
        return None


def _unreadable_directory(directory: str) -> str:
    """Why the directory ``directory`` cannot be listed (as a candidate's ``problem``)."""
    try:
        with os.scandir(directory):
            pass
    except OSError as exc:
        return f"directory not read ({exc.strerror}): the files under it were not looked at"
    return "directory not read: the files under it were not looked at"


def _is_dir(entry: os.DirEntry) -> bool:
    """Whether ``entry`` is a directory (a symlink to one included); False when that cannot be told."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _excluded(base: str, name: str, exclude: tuple[str, ...]) -> bool:
    """Whether an ``--exclude`` glob matches the entry's name or its path relative to the argument
    (``base`` ends with ``/``), as ruff's ``exclude`` does; a glob naming a directory skips all of it."""
    return any(fnmatch.fnmatch(base + name, p) or fnmatch.fnmatch(name, p) for p in exclude)


def _walked_into(entry: os.DirEntry, base: str, exclude: tuple[str, ...], ignore) -> bool:
    """Whether discovery walks into the directory ``entry``: not a symlink (``os.walk`` does not
    follow one), not version-control data, a virtual environment, cache or build directory
    (:func:`skips_directory`), not excluded, not ignored (``ignore``: None when no ``.gitignore`` reaches it)."""
    name = entry.name
    if entry.is_symlink():
        return False
    if skips_directory(name):
        return False
    if exclude and _excluded(base, name, exclude):
        return False
    return not (ignore is not None and ignore(entry.path, True))


def _looked_at(
    entry: os.DirEntry, base: str, exclude: tuple[str, ...], ignore, special: list[Candidate] | None
) -> bool:
    """Whether discovery looks at the file ``entry``: not our own temporary, not excluded, not
    ignored (``ignore``: None when no ``.gitignore`` reaches it), and either a regular file or a
    symlink that leads to one. A file that cannot be read (:func:`_problem`) is not, and when
    ``special`` is a list and the file's kind by name is one bf16-migrate handles, it is appended
    there with its problem."""
    name = entry.name
    if name.endswith(".bf16-migrate") and is_temporary(name):
        return False
    if exclude and _excluded(base, name, exclude):
        return False
    if ignore is not None and ignore(entry.path, False):
        return False
    try:
        if entry.is_file(follow_symlinks=False):
            return True
    except OSError:
        pass
    path = Path(entry.path)
    problem = _problem(path)
    if problem is None:
        return True
    kind = kind_of(path)
    if special is not None and kind is not None and kind != "unsupported":
        special.append(Candidate(path, kind, problem))
    return False


def walk(root: Path, exclude: tuple[str, ...] = (), special: list[Candidate] | None = None, ignore=None):
    """Every regular file under the directory ``root`` that discovery would look at (same skips
    and excludes as :func:`scan`), as a Path with its kind (None when it is of no known kind).
    A file that is not regular or cannot be followed (FIFO, device, socket, symlink loop,
    dangling symlink) is never yielded; when it has a kind bf16-migrate handles by its name, it
    is appended to ``special`` (a :class:`Candidate` with its ``problem``) when a list is given.
    ``ignore(path, is_dir)``, when given, skips the files and directories it is True for
    (``.gitignore``: :mod:`bf16_migrate.ignore`); it is given the path as a str."""
    for name in _files(root, exclude, special, ignore):
        path = Path(name)
        yield path, kind_of(path)


def scan(
    paths: list[Path], exclude: tuple[str, ...] = (), ignore=None, on_found: Callable[[], None] | None = None
) -> list[Candidate]:
    """The candidate files under ``paths``, sorted, each once (a symlink or a hard link to a file
    already found is the same file: it is read and written once, under the first name in sorted
    order).
    Raises :class:`ScanError` for a path that does not exist. Every text file that names a
    legacy variable is a candidate, named explicitly or found in a directory; one of no known
    kind is ``"unsupported"``. A path named explicitly that is not a regular file, and a special
    file of a handled kind found in a directory, is a candidate with a ``problem``. The kind of
    a file is only worked out once its bytes name a variable (an extensionless file's ``#!``
    line is not read otherwise). ``on_found`` is called once, as soon as one file is known to
    name a variable, possibly while the rest of a large tree is still being read in another
    process (:func:`bf16_migrate.prefilter.mentioning`); never when none does."""
    found: dict[Path, Candidate] = {}
    for root in paths:
        try:
            os.lstat(root)
        except (FileNotFoundError, NotADirectoryError):
            raise ScanError(f"{root}: no such file or directory") from None
        except OSError:
            pass  # it exists but cannot be reached (a directory above it without the execute bit): _problem says why
        if not os.path.isdir(root):  # a file, a special file, a dangling link, one that cannot be reached
            problem = _problem(root)
            if problem is not None:
                found.setdefault(root, Candidate(root, kind_of(root) or "unsupported", problem))
            elif mentions_legacy(root):
                if on_found is not None and not found:
                    on_found()
                found.setdefault(root, Candidate(root, kind_of(root) or "unsupported"))
            continue
        special: list[Candidate] = []
        first = None if found or on_found is None else on_found
        for name in mentioning(list(_files(root, exclude, special, ignore)), first):
            path = Path(name)
            found.setdefault(path, Candidate(path, kind_of(path) or "unsupported"))
        for candidate in special:
            found.setdefault(candidate.path, candidate)
    by_file: dict[object, Path] = {}
    for path in sorted(found):
        if found[path].problem is not None:
            continue
        try:  # the file itself: a symlink to it, and a hard link (another name of its inode), are the same
            info = os.stat(path)
            real: object = (info.st_dev, info.st_ino)
        except OSError:
            real = path.resolve()
        if real in by_file:
            del found[path]  # a second name of the same file
        else:
            by_file[real] = path
    return [found[p] for p in sorted(found)]


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary of :mod:`bf16_migrate.commit` (``.NAME.PID.RANDOM.bf16-migrate``)."""
    from .commit import is_temporary_name

    return is_temporary_name(name)


def launchers_of(
    scripts: list[Path],
    root: Path,
    exclude: tuple[str, ...] = (),
    ignore=None,
    limit: int = 8,
    recursive: bool = True,
) -> list[Path]:
    """The carriers under ``root`` that start one of the Python ``scripts`` (named explicitly)
    and name a legacy variable, directly or through other launchers (``run.sh`` runs
    ``launch.sh``, which runs ``train.py``), up to ``limit`` levels, and the env files those
    load (``source bf16.env``, ``--env-file``, compose ``env_file:``). A carrier whose bytes name
    a script (``train.py``, or its module ``pkg.train`` for ``python -m``) is parsed with its
    kind's parser (:func:`bf16_migrate.carriers.analyze`) and kept only if one of its launches
    resolves to that very file as the planner resolves it (:mod:`bf16_migrate.carriers.resolve`):
    another ``train.py`` elsewhere in the repository does not bring its launchers in.

    This makes a run on a script alone the same change as a run on the tree, whatever way the
    files are split across runs (pre-commit passes the changed files, in batches): the launcher's
    setting and the script's own code change are planned together, never one without the other.
    Walks ``root`` with the same skips, excludes and ignore rules as :func:`scan` (not
    ``recursive``: only the files of ``root`` itself)."""
    carriers = _carrier_files(root, exclude, ignore, recursive)
    targets = {script.resolve() for script in scripts}
    patterns = [_launcher_pattern(script) for script in scripts]
    chosen: set[Path] = set()
    loads: dict[Path, list[str]] = {}
    for _ in range(limit):
        added = _launchers_into(carriers, chosen, re.compile(b"|".join(patterns)), targets)
        if not added:
            break
        loads.update(added)
        chosen.update(added)
        for path in added:
            if path.suffix in (".sh", ".bash") or carriers[path][0] == "shell":
                targets.add(path.resolve())  # a launcher started by another launcher
                patterns.append(_launcher_pattern(path))
    chosen |= _env_files_loaded(chosen, loads, carriers)
    return sorted(path for path in chosen if any(marker in carriers[path][1] for marker in LEGACY_MARKERS))


def _launcher_pattern(path: Path) -> bytes:
    """A regular expression (bytes) for the words that name ``path`` in a launcher: its file name
    as a whole word, and for a ``.py`` file its module too (``python -m pkg.train``, ``-m train``)."""
    name = rb"(?<![\w.-])" + re.escape(path.name.encode()) + rb"(?![\w-])"
    if path.suffix == ".py":  # `python -m pkg.train`
        name += rb"|(?:\.|-m\s+)" + re.escape(path.stem.encode()) + rb"(?![\w.-])"
    return name


def _carrier_files(
    root: Path, exclude: tuple[str, ...], ignore, recursive: bool = True
) -> dict[Path, tuple[str, bytes]]:
    """Every carrier file under ``root`` (every carrier kind can start a script or hold a setting
    for one), with its kind and bytes, in walk order; a file that cannot be read is left out."""
    carriers: dict[Path, tuple[str, bytes]] = {}
    for name in _files(root, exclude, None, ignore, recursive):  # :func:`walk`, a Path for carriers only
        kind = _kind_of_name(os.path.basename(name), name)
        if kind in REGISTRY:
            path = Path(name)
            try:
                carriers[path] = (kind, path.read_bytes())
            except OSError:
                continue
    return carriers


def _launchers_into(
    carriers: dict[Path, tuple[str, bytes]], chosen: set[Path], pattern: re.Pattern[bytes], targets: set[Path]
) -> dict[Path, list[str]]:
    """The carriers not yet ``chosen`` (and not only ever included, as a ``.env`` file is) whose
    bytes match ``pattern`` and one of whose launches resolves to one of ``targets``, each with the
    env files it loads (:func:`_launch_into`), in ``carriers``' order."""
    added: dict[Path, list[str]] = {}
    for path, (kind, data) in carriers.items():
        if path in chosen or for_kind(kind).INCLUDED_ONLY or not pattern.search(data):
            continue
        loaded = _launch_into(path, kind, data, targets)
        if loaded is not None:
            added[path] = loaded
    return added


def _launch_into(path: Path, kind: str, data: bytes, targets: set[Path]) -> list[str] | None:
    """When one of the launches of the carrier ``path`` resolves (as the planner resolves it,
    :mod:`bf16_migrate.carriers.resolve`) to one of ``targets``: the env files it loads, as written
    (its includes that are not local); None when none does, or the carrier cannot be parsed (the
    run that reads it reports that)."""
    from .carriers.resolve import resolve_module, resolve_script

    try:
        analysis = analyze(kind, data.decode("utf-8", "replace"), str(path))
    except (CarrierError, RecursionError):
        return None  # reported by the run that reads it
    for launch in analysis.launches:
        if launch.target is None or launch.target[0] == "kernel":
            continue
        what, word = launch.target
        resolve = resolve_module if what == "module" else resolve_script
        found, _ = resolve(word, path, path.parent)
        if found is not None and found.resolve() in targets:
            return [inc.path for inc in analysis.includes if not inc.local]
    return None


def _env_files_loaded(
    chosen: set[Path], loads: dict[Path, list[str]], carriers: dict[Path, tuple[str, bytes]]
) -> set[Path]:
    """The carrier files the ``chosen`` launchers load (``loads``: as written, resolved from each
    launcher's directory as ``source`` and ``--env-file`` resolve them), each under the first name
    in ``carriers`` of the file it resolves to."""
    from .carriers.resolve import resolve_script

    written = [(path, name) for path in chosen for name in loads.get(path, [])]
    if not written:
        return set()
    by_real: dict[Path, Path] = {}
    for path in carriers:
        by_real.setdefault(path.resolve(), path)
    loaded = set()
    for path, name in written:
        found, _ = resolve_script(name, path, path.parent)
        if found is not None and found.resolve() in by_real:
            loaded.add(by_real[found.resolve()])
    return loaded
