"""Recording harness for ``bf16-migrate verify``, loaded into each child process.

The runner puts this directory first on ``PYTHONPATH``; Python's ``site`` module then imports
this file as ``sitecustomize`` before the training script starts.  Nothing here imports
``bf16_migrate``: the child may run under any interpreter that has torch.

Contract with the runner (``bf16_migrate.verify.runner``), all through environment variables:

``BF16_MIGRATE_RECORD``
    Path of the JSON record to write.  When it is absent this module records nothing and
    patches nothing; it only loads a ``sitecustomize`` it shadows, as Python would have.
``BF16_MIGRATE_STEPS``
    Stop after this many recorded optimizer steps (0 or absent: never stop).
``BF16_MIGRATE_LEGACY_VARIABLES``
    The names of the legacy variables (comma-separated, from the rules of bf16_migrate), whose
    values in ``os.environ`` the record keeps (``legacy_env``); read when the harness loads.
``BF16_MIGRATE_AUTOCAST``
    ``bfloat16`` (or ``float16``): the autocast control of amp. Right after the script's
    ``import torch`` the harness turns torch's autocast state on for the XLA device with that
    dtype (``torch.set_autocast_enabled("xla", True)``, thread-local: the script's main thread)
    and its weight cache off (the cache is cleared only when an outermost ``torch.autocast``
    region exits, which never happens here: a cached cast would keep the weights of step 1), and
    turns it off for the length of each backward pass and optimizer step, which autocast is not
    meant to wrap (torch.amp's docs: "autocast should wrap only the forward pass(es) of your
    network, including the loss computation(s)").
``BF16_MIGRATE_ROOT_PID``
    Set by the first process that loads the harness.  Processes started by the script
    (launchers, ``xmp.spawn``) write ``<record>.<pid>`` instead, and only if they recorded a
    step; forked children (DataLoader workers) start from an empty record.

What is recorded, and how the script is left alone:

* torch is not imported here. A meta-path finder waits for the script's own ``import torch`` and patches right after
  it (seeding torch's, NumPy's and Python's generators the same in every run: an unseeded script then builds the
  same weights in each, :func:`_seed`), so variables the script sets before importing torch (threads, logging)
  still take effect.  ``torch_xla`` is never imported by the harness before the
  script has imported it: the legacy variables are read at the first XLA tensor, and a
  script may set them late.
* Loss: ``torch.Tensor.backward`` (and ``torch.autograd.backward``) are wrapped to remember
  ``loss.detach()``; detaching adds no operation to the lazy graph.  torch's global
  ``register_optimizer_step_post_hook`` moves the pending losses into the record when an
  optimizer step completes and clears them, so a hook that fires twice for one step (a
  subclass's ``step`` and its base's ``step`` both patched by torch) records once.  With
  gradient accumulation the value of a step is the sum of its backward losses.
* A step made without ``backward()`` (gradients from ``torch.func.grad`` or ``torch.autograd.grad``
  assigned to ``p.grad``, a zeroth-order estimate): in a run that has not called ``backward``, each
  step of the first optimizer to step is a step with no loss (``null`` in ``losses``); the next
  step's start is where the run stops.
* ``torch.autograd.grad(loss, parameters)`` (an input an ``nn.Parameter``) in a run that has not
  called ``backward``: ``loss`` is recorded as a backward's would be, the step's loss; with no
  optimizer built, the call is the step.
* A script that updates its parameters by hand (``p -= lr * p.grad``; no ``torch.optim``
  optimizer is ever built in the process): each ``backward`` is a step. Its parameters and their
  dtypes are the leaves of the loss's autograd graph (``AccumulateGrad`` nodes' ``variable``),
  read at the first step; ``optimizer`` is then ``"(update by hand)"`` and there is no state.
* No sync is added: the device tensors are kept, and their values are copied to the host
  once, at the stop or at process exit, after the script's own sync.
* Stop: after ``BF16_MIGRATE_STEPS`` steps, the NEXT backward call (or step, above) writes the record and
  raises ``SystemExit(0)`` (so the script's own sync of step N has happened; ``SystemExit``
  also escapes ``except Exception``).  A script that swallows even that (bare ``except:``)
  and calls backward again is ended with ``os._exit(0)``; its record is already written.
* The element type the device holds for the first loss passed to ``backward`` (``loss_dtype``:
  ``bf16`` under the switch; a read of the tensor's IR, no execution).
* Progress: with ``BF16_MIGRATE_PROGRESS`` set, the root process rewrites that small file
  (``"<steps> <seconds>"``) at the end of every step; the runner polls it for the live display.
* Also recorded: ``time.perf_counter()`` at each step (seconds since the harness loaded),
  parameter dtypes of the optimizer at its first step (torch's view and, on XLA, the device
  element type from ``_XLAC._get_xla_tensor_shape_type``, which under ``XLA_USE_BF16`` says
  ``bf16`` where torch says ``float32``), the legacy variables present in ``os.environ`` at
  the first step (after the script had its chance to set them; at the end in a run without a
  step), the count of XLA compilations and executions
  (``torch_xla.debug.metrics`` ``CompileTime`` / ``ExecuteTime``), and why the process ended.
* The XLA compile count at the end of every optimizer step (a metrics read, no sync), so that
  the report can tell one-time compilations from recompilations in the steady state.
* Optimizer state dtypes after the first step (``optimizer.state``: exp_avg, momentum_buffer...),
  torch's dtype and the device element type, as for the parameters.
* Where a legacy variable was set in the process: the first write of each through
  ``os.environ`` (``[...] =``, ``update``, ``setdefault``: all go through ``os._Environ.__setitem__``)
  or ``os.putenv``, as the ``file:line`` of the first frame outside the standard library's
  ``os``/``collections.abc`` (``legacy_env_origin``): the line of the script, a module or a
  library (accelerate) that switched it on.
* Graphs: when the runner set ``XLA_SAVE_TENSORS_FILE`` (torch-xla then dumps the HLO of every
  graph it executes, see ``bf16_migrate/verify/graphs.py``), the size of the dump file(s) at
  the end of every optimizer step and at the stop, so that the parent can tell which graphs
  belong to which step.  A ``stat`` per step; nothing is read or parsed in the child.

Record format (JSON, ``NaN``/``Infinity`` written as Python's json does)::

    {"version": 1, "pid": int, "root": bool,
     "exit_reason": "steps_reached" | "script_exit" | "exception",
     "exception": str | null, "steps": int,
     "losses": [float | null, ...] | null, "backwards_per_step": [int, ...], "backward_calls": int,
     "step_end_s": [float, ...], "first_backward_s": float | null, "loss_dtype": str | null, "end_s": float,
     "optimizer": str | null, "param_dtypes": {str: int} | null,
     "device_param_dtypes": {str: int} | null, "host_param_dtypes": {str: int} | null,
     "state_dtypes": {state name: {dtype: int}} | null,
     "graph_marks": [{dump file name: bytes}, ...] | null, "graph_end": {...} | null,
     "compiles_at_step": [int | null, ...],
     "legacy_env": {str: str} | null, "legacy_env_origin": {str: "file:line"}, "rounding_env": str ("" unset),
     "compile_count": int | null, "execute_count": int | null,
     "torch_xla_loaded": bool, "sdpa_upcasts": int, "errors": [str, ...]}
"""

import contextlib
import os
import random
import sys
import weakref

_RECORD_ENV = "BF16_MIGRATE_RECORD"
_STEPS_ENV = "BF16_MIGRATE_STEPS"
_PROGRESS_ENV = "BF16_MIGRATE_PROGRESS"  # the runner polls it for the live progress display
_ROOT_ENV = "BF16_MIGRATE_ROOT_PID"
_GRAPHS_ENV = "XLA_SAVE_TENSORS_FILE"  # set by the runner; torch-xla appends ".<ordinal>"
_LEGACY_VARIABLES_ENV = "BF16_MIGRATE_LEGACY_VARIABLES"
_TRACE_ENV = "BF16_MIGRATE_TRACE"  # "f32": the whole dtype trace ("f32-but-step": not in an optimizer's
# step, which computes on FP32 master weights in that mode); "f64": float64 on the device, exits and errors (amp);
# "exits": exits and errors only
_TRACE_ROOTS_ENV = "BF16_MIGRATE_TRACE_ROOTS"  # the directories of the user's code (os.pathsep)
_CONTINUE_ENV = "BF16_MIGRATE_CONTINUE"  # seconds the run may go on after the recorded steps
_DEADLINE_ENV = "BF16_MIGRATE_DEADLINE"  # seconds after the harness loaded: write the record, end
_AUTOCAST_ENV = "BF16_MIGRATE_AUTOCAST"  # the autocast control's dtype ("bfloat16"): see the docstring
_FP32_ENV = "BF16_MIGRATE_FP32"  # the FP32 reference: the script's own autocast regions disabled
_ROUNDING_VARIABLE = "NEURON_RT_STOCHASTIC_ROUNDING_EN"
"""The Neuron runtime's stochastic rounding switch (bf16_migrate/rule_files.py ``STOCHASTIC_ROUNDING_VAR``: the child
imports nothing of the package), read with the legacy variables."""
_LEGACY_VARIABLES = tuple(name for name in os.environ.get(_LEGACY_VARIABLES_ENV, "").split(",") if name)
_HERE = os.path.dirname(os.path.abspath(__file__))
_DTYPE_TRACE = "_bf16_migrate_dtype_trace"  # the module of the trace, loaded from this directory


def _load_shadowed_sitecustomize():
    """Run the ``sitecustomize`` this file hides on ``sys.path``, if there is one."""
    try:
        import importlib.machinery
        import importlib.util

        paths = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
        if spec is None or spec.loader is None:
            return
        if os.path.abspath(spec.origin or "") == os.path.abspath(__file__):
            return
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["_bf16_migrate_shadowed_sitecustomize"] = module
    except Exception as exc:  # never break the script because of someone else's hook
        sys.stderr.write(f"bf16-migrate harness: shadowed sitecustomize failed: {exc!r}\n")


class _ByHand:
    """What stands for the optimizer of a script that updates its parameters by hand: the leaves
    of the loss's autograd graph (``AccumulateGrad`` nodes hold them as ``variable``) as its one
    parameter group, and no state. Its type's name is what the record says."""

    def __init__(self, loss):
        self.loss = loss
        self.state = {}

    @property
    def param_groups(self):
        return [{"params": _graph_leaves(self.loss)}]  # walked only when read (the first step)


_ByHand.__name__ = "(update by hand)"


def _graph_leaves(loss, limit=100_000):
    """The tensors that get a ``.grad`` from ``loss.backward()``: a walk of its ``grad_fn`` graph
    (at most ``limit`` nodes), each once, in the order met."""
    # the nodes are kept in ``seen`` (id -> node): a node's Python object may be made afresh at each
    # read of ``next_functions``, and a freed one's id reused
    out: list = []
    seen: dict = {}
    stack = [getattr(loss, "grad_fn", None)]
    while stack and len(seen) < limit:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        variable = getattr(fn, "variable", None)
        if variable is not None and not any(variable is known for known in out):
            out.append(variable)
        stack.extend(next_fn for next_fn, _ in getattr(fn, "next_functions", ()))
    return out


class _Recorder:
    def __init__(self, record_path, max_steps, root):
        import time

        self._perf = time.perf_counter
        self.t0 = self._perf()
        self.record_path = record_path
        self.max_steps = max_steps
        self.root = root
        self.graph_prefix = os.environ.get(_GRAPHS_ENV) or None
        self.progress_path = os.environ.get(_PROGRESS_ENV) or None
        self.tracer = None
        self.continue_s = _seconds(os.environ.get(_CONTINUE_ENV))
        self.deadline_s = _seconds(os.environ.get(_DEADLINE_ENV))
        self._reset()

    def _reset(self):
        self.pid = os.getpid()
        self.pending = None
        self.step_depth = {}  # id(optimizer) -> its step calls under way (a subclass's step calling its base's)
        self.losses = []
        self.step_end = []
        self.first_backward = None
        self.loss_dtype = None
        self.optimizer = None
        self.param_dtypes = None
        self.device_param_dtypes = None
        self.host_param_dtypes = None
        self.sdpa_upcasts = 0
        self.state_dtypes = None
        self.dtypes_from = None  # the optimizer whose dtypes were read
        self.graph_marks = []
        self.compile_marks = []
        self.legacy_env = None
        self.rounding_env = None
        self.legacy_env_origin = getattr(self, "legacy_env_origin", {})  # kept across a fork
        self.stop_requested = False
        self.written = False
        self.exception = None
        self.errors = []
        self.early_atexit = False
        self.in_tensor_backward = 0
        self.pending_from_grad = False  # the pending losses came from autograd.grad calls (on_grad)
        self.backward_calls = 0
        self.optimizers_built = getattr(self, "optimizers_built", 0)  # kept across a fork
        self.built = getattr(self, "built", None) or weakref.WeakSet()  # the optimizers, for host parameters
        self.stop_raised = 0
        self.snapshot = None  # the record at the stop, when the run goes on for the trace
        self.continue_until = 0.0
        if self.tracer is not None and not self.root:
            self.tracer.enabled = False  # a forked child (a DataLoader worker): not traced

    def after_fork_in_child(self):
        self.root = False
        self._reset()

    # -- hooks -------------------------------------------------------------------------
    def on_backward(self, tensor):
        if self._past_the_steps():
            return
        self.backward_calls += 1
        if self.pending_from_grad:
            self.pending = None  # the losses of autograd.grad calls before the first backward are no step's
            self.pending_from_grad = False
        self._add_loss(tensor)

    def on_grad(self, tensor):
        """``torch.autograd.grad(loss, parameters)`` in a run that has not called ``backward``: the
        loss of a step made without it, recorded as a backward's (with no optimizer built, the call
        is the step, as a backward is). A later ``backward`` takes over."""
        if self.backward_calls or self._past_the_steps():
            return
        if self._add_loss(tensor):
            self.pending_from_grad = True

    def _add_loss(self, tensor):
        """Add ``tensor`` (detached) to the step's pending losses; with no optimizer built the call is
        the step (:class:`_ByHand`). Returns whether it was added."""
        if self.first_backward is None:
            self.first_backward = self._perf() - self.t0
            self.loss_dtype = self._device_dtype(tensor)
            if self.tracer is not None:
                self.tracer.on_loss(tensor)  # amp: where a bf16 loss left autocast
        self._finish_at_exit()
        try:
            detached = tensor.detach()
        except Exception as exc:
            self.errors.append(f"detach failed: {exc!r}")
            return False
        if self.pending is None:
            self.pending = []
        self.pending.append(detached)
        if not self.optimizers_built:
            self.on_step(_ByHand(tensor), (), {})  # no torch.optim optimizer: the backward is the step
        return True

    def _past_the_steps(self):
        """At the start of a step (a ``backward`` call; an optimizer step in a run that never calls
        ``backward``): when the recorded steps are over, write the record and end the script, or
        let it go on for the trace (True: record nothing of this step)."""
        if self.snapshot is not None:
            # going on after the recorded steps, for the trace only: record nothing more
            if self._perf() < self.continue_until:
                return True
            self.finish("steps_reached", trace_end="budget")
            self._raise_stop()
        if self.stop_requested and self.continue_s > 0 and self.root and self.tracer is not None:
            self._take_snapshot()
            return True
        if self.stop_requested:
            self.finish("steps_reached")
            self._raise_stop()
        return False

    def _finish_at_exit(self):
        """Write the record when the script ends on its own. Registered at the first step, after the
        script imported torch_xla, so that it runs before torch_xla's own atexit handler
        (``_prepare_to_exit``) tears the runtime down."""
        if not self.early_atexit:
            import atexit

            atexit.register(self.finish, "script_exit")
            self.early_atexit = True

    def _raise_stop(self):
        """End the script after its record is written: ``SystemExit(0)`` (which also escapes
        ``except Exception``), and ``os._exit(0)`` when the script swallowed it once already (a
        bare ``except:`` or ``except BaseException``) and trained on."""
        self.stop_raised += 1
        if self.stop_raised > 1:
            sys.stderr.write("bf16-migrate harness: the script caught the stop; ending the process\n")
            sys.stderr.flush()
            os._exit(0)
        raise SystemExit(0)

    def _take_snapshot(self):
        """The recorded steps are over, and the run goes on for the trace: write the record as
        it stands now (losses, counts, graph marks: what the verdict reads), keep it, and let the
        script run on for ``continue_s`` seconds at most (checked at each ``backward``), or to
        ``deadline_s`` (a timer: evaluation code may never call ``backward``)."""
        self.snapshot = self._record("steps_reached")
        self.continue_until = self._perf() + self.continue_s
        self._write(dict(self.snapshot, trace=self._trace_json("running")))
        if self.deadline_s:
            import threading

            left = max(0.0, self.t0 + self.deadline_s - self._perf())
            timer = threading.Timer(left, self._at_deadline)
            timer.daemon = True
            timer.start()

    def _at_deadline(self):
        """The hard stop of a run going on for the trace (a timer thread): write the record and
        end the process before the runner's timeout would count the run as failed."""
        if self.written or os.getpid() != self.pid:
            return
        self.finish("steps_reached", trace_end="deadline")
        sys.stderr.write(
            "bf16-migrate harness: the trace's time after the recorded steps is over; ending the process\n"
        )
        sys.stderr.flush()
        os._exit(0)

    def _trace_json(self, end):
        if self.tracer is None:
            return None
        for _ in range(5):  # the timer thread may read while the script adds an event
            try:
                data = self.tracer.to_json()
                break
            except RuntimeError:
                continue
        else:
            data = {"version": 1, "events": [], "errors": ["the trace could not be read"], "calls": 0}
        data["end"] = end
        data["continued"] = self.snapshot is not None
        data["stop_step"] = len(self.losses) if self.snapshot is None else self.snapshot["steps"]
        return data

    def steps_done(self):
        return len(self.losses) if self.snapshot is None else self.snapshot["steps"]

    def after_stop(self):
        return self.snapshot is not None

    @staticmethod
    def _device_dtype(tensor):
        """The element type the XLA device holds for ``tensor`` (``bf16`` under the switch where
        torch says float32), read from its IR without executing anything; None off the device."""
        xlac = getattr(sys.modules.get("torch_xla"), "_XLAC", None)
        shape_type = getattr(xlac, "_get_xla_tensor_shape_type", None)
        try:
            if shape_type is not None and tensor.device.type == "xla":
                return str(shape_type(tensor))
        except Exception:
            pass
        return None

    def on_step_start(self, optimizer):
        depth = self.step_depth.get(id(optimizer), 0)
        self.step_depth[id(optimizer)] = depth + 1
        if not depth and not self.backward_calls and self.losses:
            # a run whose steps are made without backward(): the next step's start is the boundary
            self._past_the_steps()

    def on_step(self, optimizer, args, kwargs):
        depth = self.step_depth.get(id(optimizer), 1) - 1
        self.step_depth[id(optimizer)] = max(0, depth)
        if depth > 0:
            # the same optimizer's step still under way: its base class's step, called by a subclass
            # (an FP32-master-weights wrapper's `super().step()`, with its FP32 copies swapped in;
            # torch fires the global hooks for it once a plain optimizer of that class was built)
            return
        if self.snapshot is not None:
            return  # going on for the trace: the recorded steps are over
        if self.pending is None:
            if len(self.losses) == 1 and self._wraps(optimizer, self.dtypes_from):
                # the first step's second hook: a wrapper (torch-xla's ZeroRedundancyOptimizer
                # and its base_optimizer over FP32 shards) whose own parameters are the model's
                inner_state = self.state_dtypes
                self._read_dtypes(optimizer)
                self.state_dtypes = self.state_dtypes or inner_state
                return
            if self.backward_calls or (self.losses and optimizer is not self.dtypes_from):
                # another optimizer's step after the same backward (its loss went with the first); in a run
                # without backward, any optimizer but the first to step (a wrapper's, a second model's)
                return
            # a step whose gradients were made without backward() (torch.func.grad, torch.autograd.grad
            # then `p.grad = ...`, a zeroth-order estimate): a step with no loss to record
            self.pending = []
            self._finish_at_exit()
        self.losses.append(self.pending)
        self.pending = None
        self.step_end.append(self._perf() - self.t0)
        if self.graph_prefix:
            self.graph_marks.append(self._graph_sizes())
        self.compile_marks.append(self._metric_count("CompileTime"))
        if self.progress_path:
            try:
                with open(self.progress_path, "w") as fh:
                    fh.write(f"{len(self.losses)} {self.step_end[-1]:.3f}\n")
            except OSError:
                self.progress_path = None
        if len(self.losses) == 1:
            self._read_dtypes(optimizer)
            if self.tracer is not None:
                try:
                    self.tracer.note_held()  # amp: the float64 device tensors the training holds
                except Exception as exc:  # the trace is best effort: never break the script
                    self.tracer._error(f"reading the held tensors failed: {exc!r}")
        if self.max_steps and len(self.losses) >= self.max_steps:
            self.stop_requested = True

    def on_optimizer_built(self, optimizer=None):
        self.optimizers_built += 1
        if optimizer is not None:
            try:
                self.built.add(optimizer)
            except TypeError:
                pass  # an optimizer class that cannot be weakly referenced: its host parameters go unread

    @staticmethod
    def _wraps(outer, inner):
        """Whether optimizer ``outer`` holds optimizer ``inner`` (``base_optimizer``, ``optimizer``)."""
        return (
            inner is not None
            and outer is not inner
            and any(getattr(outer, name, None) is inner for name in ("base_optimizer", "optimizer", "optim"))
        )

    def _read_dtypes(self, optimizer):
        self.dtypes_from = optimizer
        self.optimizer = type(optimizer).__name__
        self.legacy_env = {k: os.environ[k] for k in _LEGACY_VARIABLES if k in os.environ}
        self.rounding_env = os.environ.get(_ROUNDING_VARIABLE, "")
        torch_dtypes: dict[str, int] = {}
        device_dtypes: dict[str, int] = {}
        xlac = getattr(sys.modules.get("torch_xla"), "_XLAC", None)
        shape_type = getattr(xlac, "_get_xla_tensor_shape_type", None)
        try:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    key = str(p.dtype).replace("torch.", "")
                    torch_dtypes[key] = torch_dtypes.get(key, 0) + 1
                    if shape_type is not None and p.device.type == "xla":
                        # Reads the element type of the IR or data: no execution.
                        dkey = str(shape_type(p))
                        device_dtypes[dkey] = device_dtypes.get(dkey, 0) + 1
        except Exception as exc:
            self.errors.append(f"reading parameter dtypes failed: {exc!r}")
        self.param_dtypes = torch_dtypes
        self.device_param_dtypes = device_dtypes or None
        self.host_param_dtypes = self._host_dtypes(optimizer)
        self.state_dtypes = self._read_state_dtypes(optimizer, shape_type)

    def _host_dtypes(self, optimizer):
        """Floating dtype name -> count of the parameters on the host (the CPU) of every optimizer
        built so far (and ``optimizer``), each parameter once; None when there is none. The switch
        acts on XLA tensors only: a host parameter was never bf16 under it."""
        out: dict[str, int] = {}
        seen: set[int] = set()
        try:
            for opt in [optimizer, *list(self.built)]:
                for group in getattr(opt, "param_groups", []):
                    for p in group["params"]:
                        if id(p) in seen or p.device.type != "cpu" or not p.is_floating_point():
                            continue
                        seen.add(id(p))
                        key = str(p.dtype).replace("torch.", "")
                        out[key] = out.get(key, 0) + 1
        except Exception as exc:
            self.errors.append(f"reading host parameter dtypes failed: {exc!r}")
        return out or None

    def _read_state_dtypes(self, optimizer, shape_type):
        """Optimizer state name -> dtype -> count, after the first step (when the state exists).

        Keys of the dtype are torch's name (``float32``, ``bfloat16``), the XLA element type
        for device tensors (``bf16``, ``f32``: what the device really holds, which differs from
        torch's under ``XLA_USE_BF16``) as ``torch/device``, and ``@cpu`` for host tensors
        (AdamW's ``step`` counter)."""
        out: dict[str, dict[str, int]] = {}
        try:
            for state in getattr(optimizer, "state", {}).values():
                if not isinstance(state, dict):
                    continue
                for name, value in state.items():
                    dtype = getattr(value, "dtype", None)
                    if dtype is None:
                        continue
                    key = str(dtype).replace("torch.", "")
                    device = getattr(value, "device", None)
                    if getattr(device, "type", None) == "xla" and shape_type is not None:
                        key = f"{key}/{shape_type(value)}"
                    elif device is not None:
                        key = f"{key}@{device.type}"
                    per = out.setdefault(str(name), {})
                    per[key] = per.get(key, 0) + 1
        except Exception as exc:
            self.errors.append(f"reading optimizer state dtypes failed: {exc!r}")
        return out

    def _graph_sizes(self):
        """File name -> size in bytes of torch-xla's graph dump files (``<prefix>.<ordinal>``)."""
        out: dict[str, int] = {}
        if not self.graph_prefix:
            return out
        try:
            folder, base = os.path.split(self.graph_prefix)
            for name in os.listdir(folder or "."):
                if name.startswith(base + ".") and name[len(base) + 1 :].isdigit():
                    out[name] = os.path.getsize(os.path.join(folder, name))
        except OSError:
            pass
        return out

    def on_exception(self, exc_type, exc, tb):
        try:
            self.exception = f"{exc_type.__name__}: {exc}"
        except Exception:
            self.exception = "unprintable exception"
        if self.tracer is not None:
            try:
                self.tracer.on_exception(exc_type, exc, tb)
            except Exception as err:
                self.errors.append(f"tracing the exception failed: {err!r}")

    # -- output ------------------------------------------------------------------------
    def _metric_count(self, name):
        if "torch_xla" not in sys.modules:
            return None
        try:
            import torch_xla.debug.metrics as met

            data = met.metric_data(name)
            return int(data[0]) if data else 0
        except Exception as exc:
            message = f"metric {name} unavailable: {exc!r}"
            if message not in self.errors:  # read at every step: say it once
                self.errors.append(message)
            return None

    def _values(self):
        """The value of each step: the sum of its backward losses; None for a step made without
        ``backward()``."""
        values: list = []
        for group in self.losses:
            if not group:
                values.append(None)
                continue
            total = 0.0
            for t in group:
                total += float(t.detach().cpu().double().sum())
            values.append(total)
        return values

    def finish(self, reason, trace_end=None):
        """Write the record (once per process). Going on for the trace, the record is the one
        taken at the stop with the whole trace added; ``trace_end`` says why the trace ended
        (default: how the process ended)."""
        if self.written or os.getpid() != self.pid:
            return
        self.written = True
        if self.tracer is not None:
            self.tracer.enabled = False  # the harness's own reads below are not the script's
        if reason == "script_exit" and self.exception is not None:
            reason = "exception"
        try:
            if self.snapshot is not None:
                record = dict(self.snapshot, trace=self._trace_json(trace_end or reason))
            else:
                record = self._record(reason)
                if record is None:
                    return
                record["trace"] = self._trace_json(trace_end or reason)
            self._write(record)
        except Exception as exc:  # the record is best effort; never mask the script's exit
            sys.stderr.write(f"bf16-migrate harness: could not write the record: {exc!r}\n")
        finally:
            self.losses = []
            self.pending = None

    def _record(self, reason):
        """The record of the run as it stands (None for a process the script started that
        recorded no step: it writes nothing)."""
        end = self._perf() - self.t0
        # Counts are read before the host copy below, which may itself execute a graph
        # when the script left its last loss unsynced.
        compile_count = self._metric_count("CompileTime")
        execute_count = self._metric_count("ExecuteTime")
        graph_end = self._graph_sizes() if self.graph_prefix else None
        try:
            losses = self._values()
        except Exception as exc:
            losses = None
            self.errors.append(f"reading loss values failed: {exc!r}")
        if not self.root and not self.losses:
            return None
        return {
            "version": 1,
            "pid": self.pid,
            "root": self.root,
            "exit_reason": reason,
            "exception": self.exception,
            "steps": len(self.losses),
            "losses": losses,
            "backwards_per_step": [len(g) for g in self.losses],
            "backward_calls": self.backward_calls,
            "step_end_s": self.step_end,
            "first_backward_s": self.first_backward,
            "loss_dtype": self.loss_dtype,
            "end_s": end,
            "optimizer": self.optimizer,
            "param_dtypes": self.param_dtypes,
            "device_param_dtypes": self.device_param_dtypes,
            "host_param_dtypes": self.host_param_dtypes,
            "state_dtypes": self.state_dtypes,
            "graph_marks": list(self.graph_marks) if self.graph_prefix else None,
            "graph_end": graph_end,
            "compiles_at_step": list(self.compile_marks),
            # read at the first step; at the end for a run that made none (an inference script)
            "legacy_env": self.legacy_env
            if self.legacy_env is not None
            else {k: os.environ[k] for k in _LEGACY_VARIABLES if k in os.environ},
            "legacy_env_origin": self.legacy_env_origin,
            "rounding_env": self.rounding_env
            if self.legacy_env is not None
            else os.environ.get(_ROUNDING_VARIABLE, ""),
            "compile_count": compile_count,
            "execute_count": execute_count,
            "torch_xla_loaded": "torch_xla" in sys.modules,
            "sdpa_upcasts": self.sdpa_upcasts,
            "errors": self.errors,
        }

    def _write(self, record):
        import json

        path = self.record_path if self.root else f"{self.record_path}.{self.pid}"
        tmp = f"{path}.tmp{self.pid}"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)


def _seconds(text):
    """A number of seconds from an environment variable (0 when absent or not a number)."""
    try:
        return max(0.0, float(text or 0))
    except ValueError:
        return 0.0


def _patch_torch(torch, rec):
    import functools
    import threading

    local = threading.local()
    tracer = rec.tracer

    def harness(hook, *args):
        """Run a hook of the recorder with the trace paused: its own tensor reads (the losses'
        host copy, the dtypes) are not the script's."""
        if tracer is None:
            return hook(*args)
        was = tracer.enabled
        tracer.enabled = False
        try:
            return hook(*args)
        finally:
            tracer.enabled = was

    outside_autocast = _autocast_control(torch, rec)
    _fp32_reference(torch)
    orig_tensor_backward = torch.Tensor.backward

    def in_engine():
        """Whether autograd's engine is running a backward now: a reentrant activation checkpoint
        (``torch.utils.checkpoint`` / ``torch_xla.utils.checkpoint`` with ``use_reentrant=True``)
        calls ``torch.autograd.backward`` on its recomputed segment from the engine's own thread,
        where ``local.inside`` is unset; that call is no loss of the script (measured: the
        recorded losses were the segments' activation sums, rising while the script's loss fell)."""
        current = getattr(torch._C, "_current_graph_task_id", None)
        return current is not None and current() != -1

    @functools.wraps(orig_tensor_backward)
    def tensor_backward(self, *args, **kwargs):
        if not getattr(local, "inside", 0) and not in_engine():
            # once per call: torch's own dispatch to a torch-function mode calls this again
            harness(rec.on_backward, self)
        local.inside = getattr(local, "inside", 0) + 1
        try:
            with outside_autocast():
                return orig_tensor_backward(self, *args, **kwargs)
        finally:
            local.inside -= 1

    torch.Tensor.backward = tensor_backward

    orig_autograd_backward = torch.autograd.backward

    @functools.wraps(orig_autograd_backward)
    def autograd_backward(tensors, *args, **kwargs):
        if not getattr(local, "inside", 0) and not in_engine():
            first = tensors
            if isinstance(tensors, (list, tuple)) and tensors:
                first = tensors[0]
            if isinstance(first, torch.Tensor):
                harness(rec.on_backward, first)
        with outside_autocast():
            return orig_autograd_backward(tensors, *args, **kwargs)

    torch.autograd.backward = autograd_backward

    _patch_autograd_grad(torch, rec, harness, lambda: getattr(local, "inside", 0) or in_engine())
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    register_optimizer_step_pre_hook(lambda optimizer, args, kwargs: harness(rec.on_step_start, optimizer))
    register_optimizer_step_post_hook(lambda optimizer, args, kwargs: harness(rec.on_step, optimizer, args, kwargs))
    orig_optimizer_init = torch.optim.Optimizer.__init__

    @functools.wraps(orig_optimizer_init)
    def optimizer_init(self, *args, **kwargs):
        harness(rec.on_optimizer_built, self)
        return orig_optimizer_init(self, *args, **kwargs)

    torch.optim.Optimizer.__init__ = optimizer_init
    _count_sdpa_upcasts(torch, rec)
    if tracer is not None:
        try:
            sys.modules[_DTYPE_TRACE].install(tracer, torch)
        except Exception as exc:
            rec.tracer = None
            rec.errors.append(f"the dtype trace could not be installed: {exc!r}")
            sys.stderr.write(f"bf16-migrate harness: the dtype trace could not be installed: {exc!r}\n")


def _patch_autograd_grad(torch, rec, harness, in_backward):
    """Wrap ``torch.autograd.grad`` so that a call with respect to parameters (:func:`_parameter_loss`)
    outside a backward pass (``in_backward()`` False) gives the recorder its loss (``on_grad``), once
    per call: under a torch-function mode (the dtype trace's) ``grad`` dispatches to the mode through
    ``handle_torch_function(grad, ...)``, whose ``grad`` is the module's name, this wrapper, so the call
    came back here and the loss was recorded twice (a hunt's SAM step: every loss doubled in the traced
    runs, not in the untraced control)."""
    import functools
    import threading

    orig_autograd_grad = torch.autograd.grad
    local = threading.local()

    @functools.wraps(orig_autograd_grad)
    def autograd_grad(outputs, inputs, *args, **kwargs):
        if not in_backward() and not getattr(local, "inside", 0):
            loss = _parameter_loss(torch, outputs, inputs)
            if loss is not None:
                harness(rec.on_grad, loss)
        local.inside = getattr(local, "inside", 0) + 1
        try:
            return orig_autograd_grad(outputs, inputs, *args, **kwargs)
        finally:
            local.inside -= 1

    torch.autograd.grad = autograd_grad


def _parameter_loss(torch, outputs, inputs):
    """The loss of ``torch.autograd.grad(outputs, inputs)`` when it is a training step's: one
    scalar output (the first of a sequence), at least one input an ``nn.Parameter``; None for a
    gradient with respect to data (Langevin dynamics, saliency, a gradient penalty) and inside
    ``torch.func`` transforms, whose wrapped tensors must not outlive them."""
    try:
        loss = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
        params = inputs if isinstance(inputs, (list, tuple)) else (inputs,)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            return None
        if torch._C._functorch.is_functorch_wrapped_tensor(loss):
            return None
        return loss if any(isinstance(p, torch.nn.Parameter) for p in params) else None
    except Exception:  # an argument torch would reject too: its own error is the script's
        return None


def _autocast_control(torch, rec):
    """With ``BF16_MIGRATE_AUTOCAST`` set, turn autocast on for the XLA device in this thread and
    off around optimizer steps (hooks); return the context manager that turns it off around a
    backward pass (a no-op without the variable). A step nested in another (a subclass's ``step``
    calling its base's: torch fires the hooks for both) turns it on again only when the outermost
    ends."""
    name = os.environ.get(_AUTOCAST_ENV)
    if not name:
        return contextlib.nullcontext
    try:
        dtype = getattr(torch, name)
        torch.set_autocast_dtype("xla", dtype)
        torch.set_autocast_cache_enabled(False)
        torch.set_autocast_enabled("xla", True)
    except Exception as exc:  # a torch without the per-device autocast API: the control is not made
        rec.errors.append(f"the autocast control could not turn autocast on: {exc!r}")
        sys.stderr.write(f"bf16-migrate harness: the autocast control could not turn autocast on: {exc!r}\n")
        raise SystemExit(3) from exc
    depth = [0]

    def pause():
        depth[0] += 1
        torch.set_autocast_enabled("xla", False)

    def resume():
        depth[0] = max(0, depth[0] - 1)
        if not depth[0]:
            torch.set_autocast_enabled("xla", True)

    @contextlib.contextmanager
    def outside_autocast():
        pause()
        try:
            yield
        finally:
            resume()

    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    register_optimizer_step_pre_hook(lambda optimizer, args, kwargs: pause())
    register_optimizer_step_post_hook(lambda optimizer, args, kwargs: resume())
    return outside_autocast


def _fp32_reference(torch):
    """With ``BF16_MIGRATE_FP32`` set (the FP32 reference run), every ``torch.autocast`` region the
    script opens itself runs disabled: a script that autocasts on its own (and set the legacy switch
    too) is otherwise no FP32 reference, its losses those of the migrated run. ``torch.autocast`` is
    ``torch.amp.autocast_mode.autocast``; its ``enabled`` argument is forced False."""
    if not os.environ.get(_FP32_ENV):
        return
    import functools

    cls = torch.amp.autocast_mode.autocast
    original = cls.__init__

    @functools.wraps(original)
    def disabled(self, *args, **kwargs):
        # (device_type, dtype, enabled, cache_enabled) in torch 2.x, any of them given positionally
        kwargs.update(zip(("device_type", "dtype", "enabled", "cache_enabled"), args))
        kwargs["enabled"] = False
        original(self, **kwargs)

    cls.__init__ = disabled


def _count_sdpa_upcasts(torch, rec):
    """Count the calls of ``torch.nn.functional.scaled_dot_product_attention`` whose query, key or
    value is bf16/f16 while torch's math kernel upcasts such tensors to f32 (since PyTorch 2.5,
    unless ``torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)``; the kernel XLA runs):
    the parent tells those round trips from autocast's own. ``nn.MultiheadAttention`` reaches it
    through the module's global name, which this replaces; nothing is counted while dynamo traces."""
    import functools

    functional = torch.nn.functional
    original = getattr(functional, "scaled_dot_product_attention", None)
    allowed = getattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed", None)
    if original is None or allowed is None:
        return
    low = (torch.bfloat16, torch.float16)

    @functools.wraps(original)
    def scaled_dot_product_attention(*args, **kwargs):
        try:
            if not torch.compiler.is_compiling() and not allowed():
                tensors = list(args[:3]) + [kwargs.get(k) for k in ("query", "key", "value")]
                if any(isinstance(t, torch.Tensor) and t.dtype in low for t in tensors):
                    rec.sdpa_upcasts += 1
        except Exception:  # never the script's failure
            pass
        return original(*args, **kwargs)

    functional.scaled_dot_product_attention = scaled_dot_product_attention


def _load_child_module(name):
    """A module of this directory (which is off ``sys.path`` once loaded), by its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_bf16_migrate_{name}", os.path.join(_HERE, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_SEED = 0
"""The seed every run of a verify starts from (:func:`_seed`)."""


def _seed(torch):
    """Seed torch's, NumPy's (when loaded) and Python's random generators at the script's ``import torch``, the same
    in every run of a verify: a script that seeds nothing then builds the same weights and draws the same batches
    in the legacy, migrated and reference runs, whose losses are compared step by step (unseeded, each run started
    from its own random weights and a right migration FAILed or was INCONCLUSIVE). A script's own seeding comes
    after its import and wins."""
    random.seed(_SEED)
    torch.manual_seed(_SEED)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(_SEED)


class _TorchImportWatcher:
    """Meta-path finder that patches torch right after the script's ``import torch``."""

    def __init__(self, rec):
        self.rec = rec

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        import importlib.util

        spec = importlib.util.find_spec("torch")
        loader = getattr(spec, "loader", None)
        orig_exec = getattr(loader, "exec_module", None)
        if loader is None or orig_exec is None:
            return spec
        rec = self.rec

        def exec_module(module):
            orig_exec(module)
            try:
                _seed(module)
                _patch_torch(module, rec)
            except Exception as exc:
                rec.errors.append(f"patching torch failed: {exc!r}")
                sys.stderr.write(f"bf16-migrate harness: patching torch failed: {exc!r}\n")

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError) as exc:  # a loader that refuses: record, don't break
            rec.errors.append(f"cannot hook the torch import ({exc!r}): no loss will be recorded")
        return spec


def _watch_legacy_writes(rec):
    """Record in ``rec.legacy_env_origin`` where each legacy variable is first written: the
    ``file:line`` of the first caller outside ``os`` and ``_collections_abc`` (through which
    ``update`` and ``setdefault`` reach ``__setitem__``; frozen modules since Python 3.11) and
    this file."""
    import types

    if not _LEGACY_VARIABLES:
        return
    skip = {os.path.abspath(os.__file__), os.path.abspath(__file__)}
    try:
        import _collections_abc

        skip.add(os.path.abspath(_collections_abc.__file__))
    except Exception:
        pass

    def note(key):
        if key not in _LEGACY_VARIABLES or key in rec.legacy_env_origin:
            return
        try:
            frame: types.FrameType | None = sys._getframe(2)
            while frame is not None and (
                frame.f_code.co_filename.startswith("<frozen ") or os.path.abspath(frame.f_code.co_filename) in skip
            ):
                frame = frame.f_back
            if frame is not None:
                rec.legacy_env_origin[key] = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        except Exception:  # never break the script's own write
            pass

    environ_class = type(os.environ)
    orig_setitem = environ_class.__setitem__

    def setitem(self, key, value):
        if self is os.environ:
            note(key)
        return orig_setitem(self, key, value)

    environ_class.__setitem__ = setitem  # type: ignore[method-assign]
    orig_putenv = os.putenv

    def putenv(key, value):
        note(key)
        return orig_putenv(key, value)

    os.putenv = putenv


def _start_trace(rec):
    """Give ``rec`` its dtype tracer (``_child/dtype_trace.py``) when the runner asked for one;
    it goes on torch's function-mode stack once the script has imported torch."""
    kind = os.environ.get(_TRACE_ENV)
    if kind not in ("f32", "f32-but-step", "f64", "exits"):
        return
    try:
        dtype_trace = _load_child_module("dtype_trace")
        roots = [r for r in os.environ.get(_TRACE_ROOTS_ENV, "").split(os.pathsep) if r]
        rec.tracer = dtype_trace.Tracer(roots, kind != "exits", rec.steps_done, rec.after_stop, kind == "f64")
        rec.tracer.step_f32 = kind == "f32-but-step"
    except Exception as exc:
        rec.errors.append(f"the dtype trace could not be loaded: {exc!r}")


def _install():
    record_path = os.environ.get(_RECORD_ENV)
    if not record_path:
        return
    try:
        max_steps = int(os.environ.get(_STEPS_ENV, "0") or 0)
    except ValueError:
        max_steps = 0
    root = _ROOT_ENV not in os.environ
    if root:
        os.environ[_ROOT_ENV] = str(os.getpid())
    rec = _Recorder(record_path, max_steps, root)
    globals()["_recorder"] = rec
    _start_trace(rec)
    _watch_legacy_writes(rec)

    import atexit

    # Fallback for a process that never calls backward (its record says 0 steps); the
    # handler registered at the first backward runs first and makes this one a no-op.
    atexit.register(rec.finish, "script_exit")
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=rec.after_fork_in_child)

    prev_hook = sys.excepthook

    def excepthook(exc_type, exc, tb):
        rec.on_exception(exc_type, exc, tb)
        return prev_hook(exc_type, exc, tb)

    sys.excepthook = excepthook

    if "torch" in sys.modules:
        _seed(sys.modules["torch"])
        _patch_torch(sys.modules["torch"], rec)
    else:
        sys.meta_path.insert(0, _TorchImportWatcher(rec))


_load_shadowed_sitecustomize()
try:
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
except Exception:
    pass
_install()
