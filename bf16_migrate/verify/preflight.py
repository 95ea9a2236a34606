"""What verify checks before it starts a run (and ``--verify`` before it rewrites anything):

1. torch and torch-xla are installed for the interpreter the runs use (else: exit 2 with the
   command that installs them, the ``xla`` extra's own pins read from bf16-migrate's metadata);
2. the XLA device the runs will use is named (``PJRT_DEVICE``, the CPU unless set);
3. the script accepts its arguments: a script that parses its command line with argparse
   (``ArgumentParser``, or a subclass such as Hugging Face's ``HfArgumentParser``) is started
   once with them and stopped as soon as its outermost ``parse_args``/``parse_known_args``
   returns, before it builds a model or touches the device: one short process instead of
   three runs that each fail on a usage error. A script that parses no argument with argparse
   within :data:`ARGS_TIMEOUT_S`, or does not use argparse, is not checked (its runs will say).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .package import PackageRun
from .records import RunError

ARGS_TIMEOUT_S = 120.0
ACCEPTED, NEVER_PARSED = 97, 98
"""Exit codes of the argument check's child: its arguments were parsed; it ended without
parsing any with argparse."""

# Run in the child with `python -c`: never imports bf16_migrate (the child runs the user's
# environment, as the harness does). argparse's parse_args calls parse_known_args, and a
# subparser's parse_known_args runs inside its parent's: the depth counter lets the outermost
# call finish (parse_args rejects unknown arguments after parse_known_args returns).
# It ends with verify: a script may import torch-xla and build things before it parses its
# arguments, and verify stopped by SIGKILL (no handler runs) must not leave it behind; Linux's
# parent-death signal (prctl(2) PR_SET_PDEATHSIG, through ctypes: the standard library has no
# call for it), then a check that verify had not already gone before the request was made.
_CHILD = r"""
import argparse, os, runpy, sys
if sys.platform.startswith("linux"):
    try:
        import ctypes, signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
if os.getppid() != int(sys.argv.pop(1)):
    os._exit(1)
_depth = [0]
def _wrap(real):
    def parse(self, *args, **kwargs):
        _depth[0] += 1
        try:
            result = real(self, *args, **kwargs)
        finally:
            _depth[0] -= 1
        if _depth[0] == 0:
            sys.stdout.flush(); sys.stderr.flush()
            os._exit(@ACCEPTED@)
        return result
    return parse
for _name in ("parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args"):
    if hasattr(argparse.ArgumentParser, _name):
        setattr(argparse.ArgumentParser, _name, _wrap(getattr(argparse.ArgumentParser, _name)))
_script = sys.argv[1]
sys.argv = sys.argv[1:]
if _script.startswith("-m:"):  # python -m: the working directory first on sys.path
    sys.path.insert(0, os.getcwd())
    runpy.run_module(_script[3:], run_name="__main__", alter_sys=True)
else:
    sys.path.insert(0, os.path.dirname(os.path.abspath(_script)))
    runpy.run_path(_script, run_name="__main__")
sys.stdout.flush(); sys.stderr.flush()
os._exit(@NEVER@)
""".replace("@ACCEPTED@", str(ACCEPTED)).replace("@NEVER@", str(NEVER_PARSED))


def xla_install_line() -> str:
    """The command that installs what verify needs: the ``xla`` extra's requirements as this
    installed bf16-migrate declares them (``pip install 'torch==2.9.0' 'torch-xla==2.9.0' ...``);
    from a checkout without metadata, ``pip install -e '.[xla]'``."""
    try:
        requires = importlib.metadata.requires("bf16-migrate") or []
    except importlib.metadata.PackageNotFoundError:
        return "pip install -e '.[xla]'"
    pins = [r.split(";")[0].strip() for r in requires if 'extra == "xla"' in r.replace("'", '"')]
    return "pip install " + " ".join(f"'{pin}'" for pin in pins) if pins else "pip install -e '.[xla]'"


@dataclass(frozen=True)
class Device:
    """The XLA device the runs use: ``pjrt`` (``PJRT_DEVICE``), and torch's and torch-xla's
    installed versions."""

    pjrt: str
    torch: str
    torch_xla: str

    def describe(self) -> str:
        where = "the CPU" if self.pjrt == "CPU" else f"PJRT_DEVICE={self.pjrt}"
        return f"XLA device: {where} (PJRT_DEVICE={self.pjrt}; torch {self.torch}, torch-xla {self.torch_xla})"


def check_xla(env: Mapping[str, str] | None = None) -> Device:
    """torch and torch-xla are installed for this interpreter (the one the runs use), else
    :class:`RunError` with the command that installs them. Looks them up without importing
    them (torch-xla takes seconds to import; the runs import it anyway)."""
    env = os.environ if env is None else env
    missing = [name for name in ("torch", "torch_xla") if importlib.util.find_spec(name) is None]
    if missing:
        raise RunError(
            f"verify needs torch and torch-xla, and {' and '.join(missing)} cannot be imported by {sys.executable}",
            hint=f"install them into this environment: {xla_install_line()}",
        )
    versions = []
    for name in ("torch", "torch-xla"):
        try:
            versions.append(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            versions.append("unknown version")
    return Device(env.get("PJRT_DEVICE") or "CPU", versions[0], versions[1])


def uses_argparse(source: str) -> bool:
    """Whether a script's text parses its command line with argparse (or a subclass)."""
    return "argparse" in source or "ArgumentParser" in source


def check_arguments(
    script: Path,
    args: Sequence[str],
    source: str,
    env: Mapping[str, str] | None = None,
    drop: Sequence[str] = (),
    python: str = sys.executable,
    timeout: float = ARGS_TIMEOUT_S,
    package: PackageRun | None = None,
) -> bool:
    """Start ``script`` (whose text is ``source``) with ``args`` in its directory, stop it
    once argparse has parsed them (module docstring). Returns True when they were accepted,
    False when it was not checked (no argparse, or nothing parsed in time). Raises
    :class:`RunError` when the script rejects them (argparse's usage error) or fails before
    parsing them. ``env``: the environment to start from (default ``os.environ``), without the
    variables of ``drop`` (the legacy variables: nothing reaches the device here). ``package``: the
    script is started as ``python -m`` from the package's top (:mod:`.package`)."""
    if not uses_argparse(source):
        return False
    base = dict(os.environ if env is None else env)
    child = {k: v for k, v in base.items() if k not in set(drop)}
    child.setdefault("PJRT_DEVICE", "CPU")
    script = Path(script).resolve()
    home = package.top if package is not None else script.parent
    paths = [str(home), *([base["PYTHONPATH"]] if base.get("PYTHONPATH") else [])]
    child["PYTHONPATH"] = os.pathsep.join(paths)
    program = f"-m:{package.module}" if package is not None else str(script)
    try:
        done = subprocess.run(
            [python, "-c", _CHILD, str(os.getpid()), program, *args],
            cwd=home,
            env=child,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False
    if done.returncode in (ACCEPTED, NEVER_PARSED):
        return done.returncode == ACCEPTED
    tail = [line for line in done.stderr.splitlines() if line.strip()][-6:]
    shown = " ".join(args) if args else "(none)"
    if done.returncode == 2 and any(line.startswith("usage:") for line in done.stderr.splitlines()):
        raise RunError(
            f"{script.name} does not accept the arguments {shown}: " + " / ".join(tail[-2:]),
            hint=(
                "pass the script's own arguments after `--` (they go to every run), e.g. "
                f"bf16-migrate verify {script.name} -- --steps 30"
            ),
            tail=tail,
        )
    raise RunError(
        f"{script.name} failed before it parsed its arguments ({shown}), exit {done.returncode}: "
        + (tail[-1] if tail else "no output"),
        hint="the runs would fail the same way: fix what the last lines say (a missing module, a missing file)",
        tail=tail,
    )
