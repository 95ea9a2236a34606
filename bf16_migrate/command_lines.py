"""Read one command line (a list of words) as a launcher would run it (the carriers' launches and
the codemod's shell strings both ask): which Python script or
module it starts, and which environment settings its wrappers carry.

The command is given as words, each a static string or ``None`` when the word is computed
(``$SCRIPT``, ``"$@"``). Wrappers are peeled off in order (``time``, ``env K=V``, ``nohup``,
``sudo``, ``docker run -e K=V IMAGE ...``, ``mpirun -x K=V``...) until an interpreter
(``python``, ``python3.11 -u``, ``torchrun --nproc_per_node=2``, ``python -m
torch.distributed.run``) is found, whose script or module is the target.

Sources of the option tables (which options take a value, so the script word can be found):
CPython's ``python --help`` (3.10-3.13); torch 2.9 ``torch/distributed/run.py``
``get_args_parser`` (every option takes a value except ``--standalone``, ``-m/--module``,
``--no-python``, ``--run-path``) and ``torch/distributed/launch.py`` (``--use-env``); GNU
coreutils ``env``, ``nice``, ``timeout``, ``stdbuf``; ``docker run --help`` (Docker 28);
Open MPI ``mpirun -x``; Slurm ``srun(1)``; Neuron's ``neuron_parallel_compile``; coverage.py
``coverage run``; ``accelerate launch``; torch_xla's ``xla_dist``; transformers'
``xla_spawn.py``. An option not in these tables makes the launch unresolvable (reported),
never guessed.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from enum import Enum


class _Word(str, Enum):
    """An enum whose members are their lower-case words: equal to, hashed, printed and
    formatted as the plain string (``f"{Decision.KEEP}"`` is ``keep``)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Action(_Word):
    """What a carrier's entry (:class:`bf16_migrate.carriers.model.Entry`) does to its variable:
    sets it, unsets it, or passes on the value of the launcher's own environment (``docker run -e X``, a
    bare ``export X``)."""

    SET = "set"
    UNSET = "unset"
    PASS = "pass"


class Target(_Word):
    """What kind of thing a launch (:class:`bf16_migrate.carriers.model.Launch`) starts: a Python
    ``script``, a ``module`` (``python -m``), a ``shell`` script, the ``kernel`` (a notebook's own
    Python), or ``inline`` code (``python -c CODE``: the word is the code)."""

    SCRIPT = "script"
    MODULE = "module"
    SHELL = "shell"
    KERNEL = "kernel"
    INLINE = "inline"


SET, UNSET, PASS = Action.SET, Action.UNSET, Action.PASS


# The launchers' option tables, one line per table (ruff format would put one option per line):
# fmt: off
NAME_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
"""One word of the form ``NAME=VALUE`` (applied to a single, already tokenized word)."""

PYTHON = re.compile(r"^(python|python[23](\.\d+)?|pypy3?)$")
"""Interpreter names (the basename of the word)."""

# CPython options that take the next word as their argument (python --help, 3.10-3.13).
PYTHON_OPTS_WITH_ARG = {"-W", "-X", "--check-hash-based-pycs"}
PYTHON_FLAGS = set("bBdEhiIOPqsSuvVx")

# torchrun (torch 2.9 torch/distributed/run.py): flags without a value.
TORCHRUN_FLAGS = {"--standalone", "--no-python", "--no_python", "--run-path", "--run_path", "--use-env", "--use_env"}
TORCHRUN_MODULE_FLAGS = {"-m", "--module"}
TORCH_LAUNCH_MODULES = {"torch.distributed.run", "torch.distributed.launch"}

# Modules run with ``python -m`` that are tools, not training code: they never create an XLA
# tensor, so a legacy variable in their environment does nothing.
TOOL_MODULES = {
    "pip", "venv", "ensurepip", "http.server", "json.tool", "compileall", "pydoc", "site", "zipfile", "tarfile",
    "pip._internal", "build", "twine", "virtualenv",
}

# Wrappers: name -> (options taking a value, whether NAME=VALUE words are environment settings)
WRAPPERS: dict[str, tuple[frozenset[str], bool]] = {
    "time": (frozenset({"-f", "-o", "--format", "--output"}), True),
    "nohup": (frozenset(), False),
    "exec": (frozenset({"-a"}), False),
    "command": (frozenset(), False),
    "builtin": (frozenset(), False),
    "nice": (frozenset({"-n", "--adjustment"}), False),
    "ionice": (frozenset({"-c", "-n", "-p", "--class", "--classdata"}), False),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), False),
    "numactl": (frozenset({
        "-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind", "--membind", "--preferred", "--interleave",
    }), False),
    "taskset": (frozenset(), False),
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group", "--chdir"}), True),
    "xvfb-run": (frozenset({"-s", "-n", "-a", "--server-args", "--server-num"}), False),
    # AWS Neuron: runs the command given to it to extract and compile its graphs (Neuron docs,
    # "PyTorch NeuronX neuron_parallel_compile CLI": ``neuron_parallel_compile <run commands>``)
    "neuron_parallel_compile": (frozenset({
        "--num_parallel", "--command", "--hlo_file", "--analyze-output", "--analyze-verbosity",
    }), False),
    # Slurm ``srun [options] <executable> [args]`` (srun(1)): the short options taking a value
    "srun": (frozenset({
        "-A", "-b", "-c", "-C", "-d", "-D", "-e", "-G", "-i", "-J", "-L", "-m", "-n", "-N", "-o", "-p", "-q", "-t",
        "-w", "-W", "-x", "--account", "--nodes", "--ntasks", "--ntasks-per-node", "--cpus-per-task", "--partition",
        "--time", "--job-name", "--output", "--error", "--nodelist", "--exclude", "--gres", "--mem", "--export",
        "--chdir", "--constraint", "--gpus", "--distribution", "--mpi", "--kill-on-bad-exit",
    }), False),
}
# ``coverage run [options] script.py`` / ``-m module`` (coverage.py ``coverage run --help``)
COVERAGE_OPTS_WITH_ARG = {"--source", "--include", "--omit", "--rcfile", "--context", "--concurrency", "--data-file"}
# ``accelerate launch`` (accelerate 1.x ``accelerate launch --help``): options without a value;
# every other option takes one.
ACCELERATE_FLAGS = {
    "--cpu", "--multi_gpu", "--tpu", "--ipex", "--use_xpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm",
    "-m", "--module", "--no_python", "--debug", "-q", "--quiet", "--downcast_bf16", "--tpu_use_cluster",
    "--tpu_use_sudo", "--same_network", "--dynamo_use_fullgraph", "--dynamo_use_dynamic", "--enable_cpu_affinity",
    "--monitor_interval", "--use_cpu",
}
# Scripts that start the training script they are given (``python xla_spawn.py --num_cores 8
# train.py``: transformers' examples/pytorch/xla_spawn.py, which calls torch_xla's
# ``xmp.spawn`` on the script's ``_mp_fn``): name -> options taking a value.
SCRIPT_LAUNCHERS = {"xla_spawn.py": {"--num_cores"}}
# ``python -m torch_xla.distributed.xla_dist [options] -- <command>`` (torch_xla/distributed/
# xla_dist.py): ``--env X=1`` is an environment setting of the command.
XLA_DIST = "torch_xla.distributed.xla_dist"
XLA_DIST_FLAGS = {"--restart-tpuvm-pod-server"}
ENV_OPTS_WITH_ARG = {"-C", "--chdir", "-S", "--split-string"}
DOCKER_ENGINES = {"docker", "podman", "nerdctl"}
DOCKER_SUBCOMMANDS = {"run", "exec", "create"}
# docker run / exec options that take a value (docker run --help, Docker 28): any other option
# is a flag.
DOCKER_OPTS_WITH_ARG = {
    "-a", "--attach", "--add-host", "--annotation", "--blkio-weight", "--cap-add", "--cap-drop", "--cgroup-parent",
    "--cgroupns", "--cidfile", "--cpu-period", "--cpu-quota", "--cpu-rt-period", "--cpu-rt-runtime", "-c",
    "--cpu-shares", "--cpus", "--cpuset-cpus", "--cpuset-mems", "--detach-keys", "--device", "--device-cgroup-rule",
    "--device-read-bps", "--device-read-iops", "--device-write-bps", "--device-write-iops", "--dns", "--dns-option",
    "--dns-search", "--domainname", "--entrypoint", "-e", "--env", "--env-file", "--expose", "--gpus", "--group-add",
    "--health-cmd", "--health-interval", "--health-retries", "--health-start-interval", "--health-start-period",
    "--health-timeout", "-h", "--hostname", "--ip", "--ip6", "--ipc", "--isolation", "--kernel-memory", "-l",
    "--label", "--label-file", "--link", "--link-local-ip", "--log-driver", "--log-opt", "--mac-address", "-m",
    "--memory", "--memory-reservation", "--memory-swap", "--memory-swappiness", "--mount", "--name", "--network",
    "--net", "--network-alias", "--oom-score-adj", "--pid", "--pids-limit", "--platform", "-p", "--publish",
    "--pull", "--restart", "--runtime", "--security-opt", "--shm-size", "--stop-signal", "--stop-timeout",
    "--storage-opt", "--sysctl", "--tmpfs", "--ulimit", "-u", "--user", "--userns", "--uts", "-v", "--volume",
    "--volume-driver", "--volumes-from", "-w", "--workdir",
}
# Slurm ``sbatch [options] script [args]`` (sbatch(1), Slurm 26.11): the short options taking a
# value (attached, ``-N2``, or the next word) and the long options that take none (any other long
# option without ``=`` takes the next word, as getopt_long reads a required argument).
SBATCH_SHORT_WITH_ARG = frozenset({
    "-A", "-B", "-C", "-D", "-F", "-G", "-J", "-L", "-M", "-N", "-S", "-a", "-b", "-c", "-d", "-e", "-i", "-m", "-n",
    "-o", "-p", "-q", "-t", "-w", "-x",
})
SBATCH_SHORT_FLAGS = frozenset({"-H", "-O", "-Q", "-V", "-W", "-h", "-k", "-s", "-v", "-I"})
SBATCH_LONG_FLAGS = frozenset({
    "--consolidate-segments", "--contiguous", "--exclusive", "--get-user-env", "--help", "--hold", "--ignore-pbs",
    "--nice", "--no-kill", "--no-requeue", "--oom-kill-step", "--overcommit", "--oversubscribe", "--parsable",
    "--propagate", "--quiet", "--reboot", "--requeue", "--resv-ports", "--spread-job", "--spread-segments",
    "--stepmgr", "--test-only", "--usage", "--use-min-nodes", "--verbose", "--version", "--wait",
})
SLURM_EXPORT_KEYWORDS = frozenset({"ALL", "NONE", "NIL"})
MPI_LAUNCHERS = {"mpirun", "mpiexec", "orterun"}
MPI_OPTS_WITH_ARG = {
    "-n", "-np", "-c", "--np", "-N", "--npernode", "-H", "--host", "--hostfile", "-hostfile", "--map-by", "--bind-to",
    "--rank-by", "--mca", "-mca", "-wdir", "--wdir", "-x",
}
SHELLS = {"bash", "sh", "zsh", "dash"}
# fmt: on


@dataclass(frozen=True)
class ExportItem:
    """One comma-separated item of a Slurm ``--export`` list (:class:`ExportList`): its span
    ``start``..``end`` in the list's text, and what it is: a ``keyword`` (``ALL``, ``NONE``,
    ``NIL``), or a variable ``name`` with the ``value`` it is given (``X=1``; None for a bare
    ``X``, which passes on the submitter's value)."""

    start: int
    end: int
    keyword: str | None = None
    name: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class ExportList:
    """The value of a Slurm ``--export`` option (sbatch(1), srun(1): ``--export={[ALL,]<environment
    variables>|ALL|NIL|NONE}``) as Slurm splits it (``find_quote_token`` of Slurm's
    src/common/env.c: at commas outside single or double quotes; a whole item in quotes loses
    them): ``text`` as written, ``offset`` where it starts in its word's value, the ``items``."""

    text: str
    offset: int
    items: tuple[ExportItem, ...]

    @property
    def isolates(self) -> bool:
        """Whether the job gets none of the submitter's environment but what the list names:
        no ``ALL`` item (``NONE``, ``NIL``, or a list of variables alone: only ``SLURM_*`` and
        those are exported, src/sbatch/sbatch.c)."""
        return not any(item.keyword == "ALL" for item in self.items)


def export_list(text: str, offset: int = 0) -> ExportList:
    """``text``, the value of a Slurm ``--export`` option, read as Slurm reads it (:class:`ExportList`)."""
    items: list[ExportItem] = []
    start, quote = 0, ""
    for k, ch in enumerate(text + ","):
        if ch in "'\"" and (not quote or quote == ch):
            quote = "" if quote else ch
        elif ch == "," and not quote:
            if k > start:
                items.append(_export_item(text[start:k], start, k))
            start = k + 1
    return ExportList(text, offset, tuple(items))


def _export_item(token: str, start: int, end: int) -> ExportItem:
    if len(token) >= 2 and token[0] in "'\"" and token[-1] == token[0]:
        token = token[1:-1]
    if token.upper() in SLURM_EXPORT_KEYWORDS and "=" not in token:
        return ExportItem(start, end, keyword=token.upper())
    name, eq, value = token.partition("=")
    return ExportItem(start, end, name=name, value=value if eq else None)


@dataclass
class EnvWord:
    """An environment setting carried by a wrapper word: ``env X=1``, ``docker run -e X=1``,
    ``--env=X=1``, ``mpirun -x X=1``, ``env -u X``. ``words`` are the indices of the words that
    make it (the option and its value); ``value_word`` is the index holding ``NAME=VALUE`` (or
    ``NAME``); ``prefix`` the characters before ``NAME`` in that word (``--env=``)."""

    name: str
    value: str | None
    action: Action
    words: list[int]
    value_word: int
    prefix: str = ""
    listed: ExportItem | None = None
    """For an item of a Slurm ``--export`` list (``--export=ALL,XLA_USE_BF16=1``): the item, whose
    list is edited in place (only that item goes); None for a word of its own."""


@dataclass
class Command:
    """What a command line does, as far as bf16-migrate cares.

    ``target`` as in :class:`.model.Launch`; ``problem`` when it starts Python in a way that
    cannot be resolved to a file; ``python`` is True when the command starts Python at all;
    ``env`` the wrapper settings; ``env_files`` the ``--env-file`` paths; ``inner`` is set for
    ``bash -c 'SCRIPT'`` (the index of the script word); ``inline`` for ``python -c CODE`` (the
    index of the word holding the code: ``CODE``, or ``-cCODE`` with ``inline_attached``)."""

    target: tuple[Target, str] | None = None
    problem: str | None = None
    python: bool = False
    env: list[EnvWord] = field(default_factory=list)
    env_files: list[str] = field(default_factory=list)
    inner: int | None = None
    inline: int | None = None
    inline_attached: bool = False
    args: list[str | None] = field(default_factory=list)
    """The words after the script or module: its own arguments (``--bf16``)."""
    isolated: bool = False
    """Started with an empty environment (``env -i``, ``env -``: coreutils env(1)): nothing the
    launcher set reaches it, only the settings after the ``-i``."""
    batch: bool = False
    """The target is a Slurm batch script submitted by ``sbatch``: its ``#SBATCH`` directives apply."""
    export_lists: list[tuple[int, ExportList]] = field(default_factory=list)
    """The Slurm ``--export`` lists of the command, with the index of the word holding each."""
    env_reset: str | None = None
    """Why the launcher's settings may not reach the program, decided outside the command line
    (``sudo`` without ``-E``/``--preserve-env``: sudoers' ``env_reset``, on by default, keeps only
    the variables its policy lists, sudoers(5)); None when they do."""


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def read_command(words: list[str | None]) -> Command:
    """Read ``words`` (a command's words after its leading ``NAME=VALUE`` assignments; ``None``
    for a computed word) into a :class:`Command`: the wrappers in front (``env``, ``nohup``,
    ``timeout``, ``mpirun``...) skipped with the settings they carry, then the program.

    Never raises: what cannot be read becomes ``Command.problem`` (only when the command starts
    Python) or an unrecognised command (``python`` False)."""
    cmd = Command()
    i: int | None = 0
    n = len(words)
    while i is not None and i < n:
        w = words[i]
        if w is None:
            return cmd  # computed program name: not recognisably Python
        base = _basename(w)
        if base == "env":
            i = _env(words, i + 1, cmd)
        elif base == "srun":
            i = _srun(words, i + 1, cmd)
        elif base == "salloc":  # `salloc [options] [command]` (salloc(1)): the options are sbatch's
            i = _salloc(words, i + 1, cmd)
        elif base in WRAPPERS:
            i = _wrapper(words, i + 1, cmd, base)
        elif base == "timeout":
            i = _timeout(words, i + 1)
        elif base in MPI_LAUNCHERS:
            i = _mpi(words, i + 1, cmd)
        else:
            read = _program(words, i, cmd, w, base)
            if read.env_reset is not None and (read.python or read.target is not None) and read.problem is None:
                read.problem = read.env_reset  # whether the launcher's settings reach it is not ours to tell
            return read
    return cmd


def _env(words: list[str | None], i: int, cmd: Command) -> int | None:
    """``env [-u X] [X=1]... cmd`` (GNU coreutils env(1)) from ``i``: the settings carried, and
    the index of the command (None when a computed word ends the reading)."""
    n = len(words)
    while i < n:
        w = words[i]
        if w is None:
            return None
        m = NAME_VALUE.match(w)
        if m:
            cmd.env.append(EnvWord(m.group(1), m.group(2), SET, [i], i))
            i += 1
        elif w in ("-u", "--unset") and i + 1 < n and (unset := words[i + 1]) is not None:
            cmd.env.append(EnvWord(unset, None, UNSET, [i, i + 1], i + 1))
            i += 2
        elif w.startswith("--unset="):
            cmd.env.append(EnvWord(w[len("--unset=") :], None, UNSET, [i], i, "--unset="))
            i += 1
        elif w in ENV_OPTS_WITH_ARG:
            i += 2
        elif w in ("-i", "--ignore-environment", "-"):
            cmd.isolated = True
            cmd.env.clear()  # what came before `-i` is dropped with the rest of the environment
            i += 1
        elif w.startswith("-"):
            i += 1
        else:
            break
    return i


def _wrapper(words: list[str | None], i: int, cmd: Command, base: str) -> int:
    """A wrapper of :data:`WRAPPERS` (``nohup``, ``nice``, ``taskset``...) from ``i``: its
    options skipped (and the ``NAME=VALUE`` words of those that take them); the command's index.
    ``sudo`` without ``-E``/``--preserve-env`` sets :attr:`Command.env_reset`."""
    with_arg, assignments = WRAPPERS[base]
    if base == "taskset":
        i = _past_taskset_mask(words, i)
    options, i = _leading_options(words, i, with_arg)
    if base == "sudo" and not _sudo_preserves_environment(options):
        cmd.env_reset = _SUDO_ENV_RESET
    if assignments:
        i = _wrapper_assignments(words, i, cmd)
    return i


_SUDO_ENV_RESET = (
    "sudo starts it with the environment its policy allows (sudoers env_reset), not the launcher's: "
    "pass -E (or --preserve-env=NAME) to sudo, or set the variable in the script"
)
"""Why a program started by ``sudo`` without ``-E`` may not get the launcher's settings (sudoers(5),
``env_reset``)."""


def _leading_options(words: list[str | None], i: int, with_arg: frozenset[str]) -> tuple[list[str], int]:
    """The options of a wrapper from ``i`` (words starting with ``-``, ``-`` alone excepted; those in
    ``with_arg`` take the next word too, as the wrapper's manual page lists them), and the index of the
    first word after them. A computed word ends the options."""
    options: list[str] = []
    while i < len(words) and (v := words[i]) is not None and v.startswith("-") and v != "-":
        options.append(v)
        i += 2 if v in with_arg else 1
    return options, i


def _sudo_preserves_environment(options: list[str]) -> bool:
    """Whether ``sudo``'s ``options`` keep the caller's environment: ``-E``, ``--preserve-env`` or
    ``--preserve-env=NAME,...``, or ``E`` bundled in a short option group (``-HE``) (sudo(8))."""
    return any(
        v in ("-E", "--preserve-env") or v.startswith("--preserve-env=") or (v[1:2] != "-" and "E" in v[1:])
        for v in options
    )


def _past_taskset_mask(words: list[str | None], i: int) -> int:
    """The index after ``taskset``'s mask or cpu list, itself after an optional ``-c``/``-p``
    (util-linux taskset(1): ``taskset [options] mask command``)."""
    if i < len(words) and (v := words[i]) is not None and v.startswith("-"):
        i += 1  # -c / -p
    return i + 1


def _wrapper_assignments(words: list[str | None], i: int, cmd: Command) -> int:
    """The ``NAME=VALUE`` words from ``i`` that a wrapper passes on as environment settings
    (``time X=1 python``: bash(1), a simple command's leading assignments; ``sudo X=1 cmd``: sudo(8)),
    appended to ``cmd.env``; returns the index of the first word that is not one."""
    while i < len(words) and (v := words[i]) is not None and (m := NAME_VALUE.match(v)):
        cmd.env.append(EnvWord(m.group(1), m.group(2), SET, [i], i))
        i += 1
    return i


def _timeout(words: list[str | None], i: int) -> int:
    """``timeout [options] DURATION cmd`` (coreutils timeout(1)) from ``i``: the command's index."""
    n = len(words)
    while i < n and (v := words[i]) is not None and v.startswith("-"):
        i += 2 if v in ("-k", "-s", "--kill-after", "--signal") else 1
    return i + 1  # the duration


def _mpi(words: list[str | None], i: int, cmd: Command) -> int:
    """``mpirun``/``mpiexec`` options from ``i`` (Open MPI mpirun(1): ``-x NAME=VALUE`` sets,
    ``-x NAME`` passes the launcher's value): the command's index."""
    n = len(words)
    while i < n and (v := words[i]) is not None and v.startswith("-"):
        if v == "-x" and i + 1 < n and (passed := words[i + 1]) is not None:
            cmd.env.append(_env_word(passed, i))
            i += 2
        elif v in MPI_OPTS_WITH_ARG:
            i += 2
        else:
            i += 1
    return i


def _export_words(value: str, word: int, prefix: str, option_words: list[int], cmd: Command) -> None:
    """The settings of a Slurm ``--export`` list (``value``, at character ``len(prefix)`` of the
    word ``word``; ``option_words``: the words the option takes) into ``cmd.env``, one
    :class:`EnvWord` per variable item; a list without ``ALL`` makes the command
    :attr:`Command.isolated` (only what it names reaches the job)."""
    listed = export_list(value, len(prefix))
    if listed.isolates:
        cmd.isolated = True
        cmd.env.clear()  # as `env -i`: what was set before is not exported to the job
    for item in listed.items:
        if item.name is None:
            continue
        action = SET if item.value is not None else PASS
        cmd.env.append(EnvWord(item.name, item.value, action, option_words, word, prefix, item))
    cmd.export_lists.append((word, listed))


def _slurm_option(words: list[str | None], i: int, cmd: Command, short_arg: frozenset[str], long_flags) -> int:
    """One Slurm option at ``i`` (a static word starting with ``-``): its ``--export`` list read
    (:func:`_export_words`); the index of the word after it (and after its value)."""
    w = words[i]
    assert w is not None and w.startswith("-"), "the caller passes a static option word"
    if w.startswith("--export="):
        _export_words(w[len("--export=") :], i, "--export=", [i], cmd)
        return i + 1
    if w == "--export":
        value = words[i + 1] if i + 1 < len(words) else None
        if value is not None:
            _export_words(value, i + 1, "", [i, i + 1], cmd)
        return i + 2
    if w.startswith("--"):
        return i + 1 if ("=" in w or w in long_flags) else i + 2
    return i + 2 if (w in short_arg) else i + 1  # `-N2`: the value attached


def _srun(words: list[str | None], i: int, cmd: Command) -> int:
    """``srun [options] <executable> [args]`` (srun(1)) from ``i``: its options skipped, its
    ``--export`` list read; the index of the executable."""
    with_arg, _ = WRAPPERS["srun"]
    while i < len(words) and (v := words[i]) is not None and v.startswith("-") and v != "-":
        if v.startswith("--export"):
            i = _slurm_option(words, i, cmd, frozenset(), frozenset())
        else:
            i += 2 if v in with_arg else 1
    return i


def _salloc(words: list[str | None], i: int, cmd: Command) -> int | None:
    """``salloc [options] [command [args]]`` (salloc(1)) from ``i``: its options skipped (the
    allocation options it shares with sbatch); the index of the command it runs, None when an
    option is computed or unknown (nothing read past it)."""
    while i < len(words) and (w := words[i]) is not None and w.startswith("-") and w != "-":
        if not w.startswith("--") and w[:2] not in SBATCH_SHORT_WITH_ARG and w[:2] not in SBATCH_SHORT_FLAGS:
            return None
        i = _slurm_option(words, i, cmd, SBATCH_SHORT_WITH_ARG, SBATCH_LONG_FLAGS)
    return None if i < len(words) and words[i] is None else i


def _sbatch(words: list[str | None], i: int, cmd: Command) -> Command:
    """``sbatch [options] script [args]`` (sbatch(1)) from ``i``: a launch of the batch script
    (``("shell", script)``: sbatch runs it by its ``#!`` line, its ``#SBATCH`` directives apply),
    with the settings of its ``--export`` list; ``--wrap CMD`` runs CMD through ``sh -c``
    (:attr:`Command.inner`: read, not followed)."""
    n = len(words)
    while i < n:
        w = words[i]
        if w is None:
            cmd.python = True
            cmd.problem = "an sbatch option or the batch script is computed"
            return cmd
        if w in ("--wrap", "--wrap=") or w.startswith("--wrap="):
            cmd.python = True
            cmd.inner = i if w.startswith("--wrap=") and len(w) > len("--wrap=") else i + 1
            cmd.problem = "sbatch --wrap runs its command through `sh -c`"
            return cmd
        if not w.startswith("-") or w == "-":
            break
        if not w.startswith("--") and w[:2] not in SBATCH_SHORT_WITH_ARG and w[:2] not in SBATCH_SHORT_FLAGS:
            cmd.python = True
            cmd.problem = f"unknown sbatch option {w}"
            return cmd
        i = _slurm_option(words, i, cmd, SBATCH_SHORT_WITH_ARG, SBATCH_LONG_FLAGS)
    if i >= n or words[i] in (None, "-"):
        cmd.python = True
        cmd.problem = (
            "sbatch reads the batch script from standard input"
            if i >= n or words[i] == "-"
            else ("the batch script is computed")
        )
        return cmd
    script = words[i]
    assert script is not None, "checked above"
    cmd.target = (Target.SHELL, script)
    cmd.args = words[i + 1 :]
    cmd.batch = True
    return cmd


def _program(words: list[str | None], i: int, cmd: Command, w: str, base: str) -> Command:
    """The program at ``i`` (``w``, its basename ``base``): docker, a shell, coverage,
    accelerate, Python, torchrun, or a script run directly."""
    n = len(words)
    if base in DOCKER_ENGINES and i + 1 < n and words[i + 1] in DOCKER_SUBCOMMANDS:
        return _docker(words, i + 2, cmd, exec_=words[i + 1] == "exec")
    if base in SHELLS:
        return _shell(words, i, cmd)
    if base == "sbatch":
        return _sbatch(words, i + 1, cmd)
    if base == "coverage" and i + 1 < n and words[i + 1] == "run":
        cmd.python = True
        return _python(words, i + 2, cmd, with_arg=COVERAGE_OPTS_WITH_ARG, flags=None)
    if base == "accelerate" and i + 1 < n and words[i + 1] == "launch":
        return _accelerate(words, i + 2, cmd)
    if PYTHON.match(base):
        cmd.python = True
        return _python(words, i + 1, cmd)
    if base == "torchrun":
        cmd.python = True
        return _torchrun(words, i + 1, cmd)
    if base.endswith(".sh") or base.endswith(".bash"):
        cmd.target = (Target.SHELL, w)
        return cmd
    if base.endswith(".py"):
        cmd.python = True
        cmd.target = (Target.SCRIPT, w)
    return cmd


def _shell(words: list[str | None], i: int, cmd: Command) -> Command:
    """``bash -c '...'`` (its string read by the caller, ``Command.inner``) or ``bash
    script.sh`` (a launch of that shell script)."""
    n = len(words)
    rest = words[i + 1 :]
    if rest and rest[0] == "-c" and len(rest) > 1:
        cmd.inner = i + 2
        return cmd
    j = i + 1
    while j < n and (v := words[j]) is not None and v.startswith("-"):
        j += 1
    if j < n:
        shell_script = words[j]
        if shell_script is None:
            return cmd
        cmd.target = (Target.SHELL, shell_script)
    return cmd


def _python(
    words: list[str | None],
    i: int,
    cmd: Command,
    with_arg: set[str] = PYTHON_OPTS_WITH_ARG,
    flags: set[str] | None = PYTHON_FLAGS,
) -> Command:
    """An interpreter's words from ``i``: options (``with_arg`` take the next word; short
    ``flags`` may be bundled, ``None`` accepts any option), then ``-m module`` or the script."""
    while i < len(words):
        w = words[i]
        if w is None:
            cmd.problem = "an interpreter option or the script is computed"
            return cmd
        if w.startswith("-m"):
            return _python_module(words, i, cmd)
        if w.startswith("-c"):
            return _python_inline(words, i, cmd)
        if w == "-":
            cmd.problem = "the script is read from standard input"
            return cmd
        width = _option_width(w, with_arg, flags)
        if width is None:
            cmd.problem = f"unknown interpreter option {w}"
            return cmd
        if width == 0:
            return _script(words, i, cmd)
        i += width
    cmd.python = False  # bare `python`: an interactive interpreter, nothing launched
    return cmd


def _option_width(w: str, with_arg: set[str], flags: set[str] | None) -> int | None:
    """How many words the interpreter option ``w`` takes: 2 for one in ``with_arg`` (its argument
    follows), 1 for a long option or a group of known short ``flags`` (``-u``, ``-uB``; ``-W``/``-X``
    with their argument attached; ``flags`` None: any), 0 when ``w`` is not an option (the script),
    None for a short option the table does not know (python(1), ``python --help``)."""
    if w in with_arg:
        return 2
    if w.startswith("--"):
        return 1
    if not (w.startswith("-") and len(w) > 1):
        return 0
    if flags is None or w[1] in "WX" or set(w[1:]) <= flags:
        return 1
    return None


def _python_module(words: list[str | None], i: int, cmd: Command) -> Command:
    """``python -m module args`` or ``python -mmodule`` at ``i`` (python(1), ``-m``): the module as the
    target with the words after it as its arguments; a torch launcher module (``torch.distributed.run``)
    or torch_xla's ``xla_dist`` is read on as that launcher; a tool module (``pip``...) starts no
    training (``python`` False)."""
    w = words[i]
    assert w is not None, "the caller passes the index of a static -m word"
    if w != "-m":
        cmd.target = (Target.MODULE, w[2:])
        return cmd
    module = words[i + 1] if i + 1 < len(words) else None
    if module is None:
        cmd.problem = "the module run with -m is computed"
        return cmd
    if module in TORCH_LAUNCH_MODULES:
        return _torchrun(words, i + 2, cmd)
    if module == XLA_DIST:
        return _xla_dist(words, i + 2, cmd)
    if module in TOOL_MODULES or module.split(".")[0] in TOOL_MODULES:
        cmd.python = False
        return cmd
    cmd.target = (Target.MODULE, module)
    cmd.args = words[i + 2 :]
    return cmd


def _python_inline(words: list[str | None], i: int, cmd: Command) -> Command:
    """``python -c CODE`` or ``python -cCODE`` at ``i`` (python(1), ``-c``): the code is the program,
    read as a script is (:attr:`Target.INLINE`, the words after it its ``sys.argv[1:]``); computed code
    is a problem; code that never names torch and imports nothing but the standard library cannot be
    affected by the variable (``python`` False). Code that imports another module (``import train_mlm;
    train_mlm.main()``) is read on: the tree's module may be the training it hands over to
    (:mod:`bf16_migrate.carriers.delegate`)."""
    w = words[i]
    assert w is not None, "the caller passes the index of a static -c word"
    attached = len(w) > 2
    at = i if attached else i + 1
    code = w[2:] if attached else (words[at] if at < len(words) else "")
    if code is None:
        cmd.problem = "`python -c` runs code computed at run time"
    elif "torch" not in code and not _imports_beyond_stdlib(code):
        cmd.python = False  # inline code that never imports torch: the variable does nothing
    else:
        cmd.target = (Target.INLINE, code)
        cmd.inline, cmd.inline_attached = at, attached
        cmd.args = words[at + 1 :]
    return cmd


_IMPORTED = re.compile(r"(?:^|[;\s])(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))")


def _imports_beyond_stdlib(code: str) -> bool:
    """Whether ``code`` imports a module whose top package is not the standard library's
    (``sys.stdlib_module_names``): it may be a module of the tree. A rough reading of the text, enough
    to keep such code a launch (what it imports is resolved against the tree later)."""
    for found in _IMPORTED.finditer(code):
        name = (found.group(1) or found.group(2) or "").lstrip(".").split(".")[0]
        if name and name not in sys.stdlib_module_names:
            return True
    return False


def _torchrun(words: list[str | None], i: int, cmd: Command) -> Command:
    cmd.python = True
    n = len(words)
    module = False
    while i < n:
        w = words[i]
        if w is None:
            cmd.problem = "a launcher option or the script is computed"
            return cmd
        if w in TORCHRUN_MODULE_FLAGS:
            module = True
            i += 1
            continue
        if w in TORCHRUN_FLAGS:
            i += 1
            continue
        if w.startswith("-"):
            i += 1 if "=" in w else 2
            continue
        if module:
            cmd.target = (Target.MODULE, w)
            cmd.args = words[i + 1 :]
            return cmd
        return _script(words, i, cmd)
    cmd.problem = "no training script after the launcher's options"
    return cmd


def _script(words: list[str | None], i: int, cmd: Command) -> Command:
    """``words[i]`` is the script started; a script that itself starts the script it is given
    (:data:`SCRIPT_LAUNCHERS`) is looked through."""
    w = words[i]
    assert w is not None, "the callers pass the index of a static word"
    spawner = SCRIPT_LAUNCHERS.get(_basename(w))
    if spawner is None:
        cmd.target = (Target.SCRIPT, w)
        cmd.args = words[i + 1 :]
        return cmd
    i += 1
    while i < len(words):
        v = words[i]
        if v is None:
            cmd.problem = f"an option of {_basename(w)} or the script it starts is computed"
            return cmd
        if v.startswith("-"):
            i += 2 if v in spawner else 1
            continue
        cmd.target = (Target.SCRIPT, v)
        cmd.args = words[i + 1 :]
        return cmd
    cmd.problem = f"{_basename(w)} is given no training script"
    return cmd


def _accelerate(words: list[str | None], i: int, cmd: Command) -> Command:
    """``accelerate launch [options] script.py`` (or ``-m module``)."""
    cmd.python = True
    n = len(words)
    module = False
    while i < n:
        w = words[i]
        if w is None:
            cmd.problem = "an accelerate option or the script is computed"
            return cmd
        if w in ("-m", "--module"):
            module = True
            i += 1
            continue
        if w.startswith("-"):
            i += 1 if ("=" in w or w in ACCELERATE_FLAGS) else 2
            continue
        if module:
            cmd.target = (Target.MODULE, w)
            return cmd
        return _script(words, i, cmd)
    cmd.problem = "no training script after accelerate's options"
    return cmd


def _xla_dist(words: list[str | None], i: int, cmd: Command) -> Command:
    """``python -m torch_xla.distributed.xla_dist [--env X=1]... -- <command>``."""
    cmd.python = True
    n = len(words)
    while i < n and words[i] != "--":
        w = words[i]
        if w == "--env" and i + 1 < n and (setting := words[i + 1]) is not None:
            m = NAME_VALUE.match(setting)
            if m:
                cmd.env.append(EnvWord(m.group(1), m.group(2), SET, [i, i + 1], i + 1))
            i += 2
            continue
        i += 1 if (w is None or "=" in w or w in XLA_DIST_FLAGS) else 2 if w.startswith("-") else 1
    if i >= n:
        cmd.problem = "xla_dist is given no command after `--`"
        return cmd
    inner = read_command(words[i + 1 :])
    cmd.target, cmd.problem, cmd.args = inner.target, inner.problem, inner.args
    offset = i + 1
    for e in inner.env:
        e.words = [k + offset for k in e.words]
        e.value_word += offset
    cmd.env += inner.env
    return cmd


def _docker(words: list[str | None], i: int, cmd: Command, exec_: bool) -> Command:
    n = len(words)
    while i < n:
        w = words[i]
        if w is None:
            cmd.python = True
            cmd.problem = "a container option or the image is computed"
            return cmd
        if w in ("-e", "--env") and i + 1 < n:
            v = words[i + 1]
            if v is not None:
                cmd.env.append(_env_word(v, i))
            i += 2
            continue
        if w.startswith("--env=") or (w.startswith("-e") and len(w) > 2 and not w.startswith("--")):
            prefix = "--env=" if w.startswith("--env=") else "-e"
            body = w[len(prefix) :]
            m = NAME_VALUE.match(body)
            if m:
                cmd.env.append(EnvWord(m.group(1), m.group(2), SET, [i], i, prefix))
            else:
                cmd.env.append(EnvWord(body, None, PASS, [i], i, prefix))
            i += 1
            continue
        if w == "--env-file" and i + 1 < n:
            if (env_file := words[i + 1]) is not None:
                cmd.env_files.append(env_file)
            i += 2
            continue
        if w.startswith("--env-file="):
            cmd.env_files.append(w[len("--env-file=") :])
            i += 1
            continue
        if w.startswith("-"):
            i += 2 if (w in DOCKER_OPTS_WITH_ARG and "=" not in w) else 1
            continue
        # the image (run/create) or the container (exec); the command follows
        rest = words[i + 1 :]
        if not rest:
            cmd.python = True
            cmd.problem = "the container runs the image's default command"
            return cmd
        inner = read_command(rest)
        cmd.python = inner.python
        cmd.target = inner.target
        cmd.problem = inner.problem
        cmd.args = inner.args
        cmd.env_files += inner.env_files
        offset = i + 1
        for e in inner.env:
            e.words = [k + offset for k in e.words]
            e.value_word += offset
        cmd.env += inner.env
        if inner.inner is not None:
            cmd.inner = inner.inner + offset
        return cmd
    return cmd


def _env_word(word: str, i: int) -> EnvWord:
    """The value of an option at word ``i`` that passes a variable to the command (``mpirun -x``,
    ``docker run -e``): ``NAME=VALUE`` sets it, a bare ``NAME`` passes the caller's value on."""
    m = NAME_VALUE.match(word)
    if m:
        return EnvWord(m.group(1), m.group(2), SET, [i, i + 1], i + 1)
    return EnvWord(word, None, PASS, [i, i + 1], i + 1)
