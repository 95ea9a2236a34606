"""Code the codemod emits into migrated scripts, as libcst nodes.

The migrated script must never import bf16_migrate (users uninstall the tool after migrating),
so anything more than a one-liner is emitted as self-contained source.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import cast

import libcst as cst
import libcst.matchers as m

MASTER_WEIGHTS_FACTORY = "with_fp32_master_weights"

EMITTED_MARK = "Added by bf16-migrate ("
"""Opens the docstring of every emitted helper: such a docstring is the codemod's own, never a
finding (:mod:`.string_mentions`). No emitted text spells out a legacy variable's name (it
says "the legacy bf16 environment switch"): a migrated file must never again match a ``grep``
for those names, nor the tool's own byte prefilter."""

# gpu-compatible mode (AWS Neuron's migration guide, "BF16 in GPU-compatible mode"): the
# model's parameters are bf16; the stock update runs on an FP32 master copy of each weight (so
# its state, e.g. Adam's exp_avg, is created in FP32 too) and the bf16 weights are refreshed from
# the master copy after every step. A subclass, not a wrapper object, so that
# `isinstance(opt, torch.optim.Optimizer)` still holds for LR schedulers and
# `xm.optimizer_step(opt)` still all-reduces the bf16 gradients before calling `step`.
# The parameter's `.data` is swapped for the step, which keeps parameter identity (the keys of
# `optimizer.state`). Checked on the XLA CPU device with torch-xla 2.9 (verify on fixtures/mlp_regression).
MASTER_WEIGHTS_SOURCE = '''
def with_fp32_master_weights(optimizer_class):
    """Return a subclass of `optimizer_class` that keeps an FP32 master copy of bf16 weights.

    Added by bf16-migrate (gpu-compatible mode of Neuron's migration guide,
    replacing the legacy bf16 environment switch): the model's parameters stay bf16; each step
    runs the stock update in FP32 on the master weights (so its state, e.g. Adam's moments, is
    FP32 too) and copies the result into the bf16 parameters. `state_dict()` carries the master weights under
    "fp32_master_weights" (as torch-xla's ZeroRedundancyOptimizer does with save_master_weights)
    and `load_state_dict()` restores them, keeping the state FP32. A checkpoint without them, or
    weights changed outside the optimizer, start the master copy anew from the bf16 weights,
    with a warning.
    """
    import warnings

    class FP32MasterWeights(optimizer_class):
        def _swap_in_fp32(self, grads, loaded=None):
            # each bf16 parameter's data (and gradient) replaced by its FP32 master copy
            if not hasattr(self, "fp32_master_weights"):
                self.fp32_master_weights = {}  # parameter -> (master copy, parameter._version)
            swapped = []
            params = [p for group in self.param_groups for p in group["params"]]
            for index, param in enumerate(params):
                if param.dtype == torch.float32 or not param.is_floating_point() or (grads and param.grad is None):
                    continue
                if loaded is not None:
                    master = loaded.get(index)
                    if master is None:
                        warnings.warn("the checkpoint has no FP32 master weights (written before the migration?): they start anew from the bf16 weights")
                else:
                    master, version = self.fp32_master_weights.get(param, (None, None))
                    if master is not None and version != param._version:
                        warnings.warn("bf16 weights changed outside the optimizer: their FP32 master weights start anew from them")
                        master = None
                low_grad = param.grad
                swapped.append((param, param.data, low_grad))
                param.grad = None
                param.data = (param.detach() if master is None else master).to(device=param.device, dtype=torch.float32)
                if grads:
                    param.grad = low_grad.float()
                    state = self.state.get(param, {})
                    for key, value in state.items():
                        # state made from the bf16 weights before the first step (Adagrad's sum): FP32 too
                        if torch.is_tensor(value) and value.is_floating_point() and value.shape == param.shape:
                            state[key] = value.float()
            return swapped

        def _swap_back(self, swapped, copy_back):
            for param, low_data, low_grad in swapped:
                master = param.data
                if copy_back:
                    low_data.copy_(master)
                param.grad = None
                param.data = low_data
                param.grad = low_grad
                self.fp32_master_weights[param] = (master, param._version)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            with torch.no_grad():
                swapped = self._swap_in_fp32(grads=True)
                try:
                    super().step()
                finally:
                    self._swap_back(swapped, copy_back=True)
            return loss

        def state_dict(self):
            with torch.no_grad():
                self._swap_back(self._swap_in_fp32(grads=False), copy_back=False)
            state_dict = super().state_dict()
            params = [p for group in self.param_groups for p in group["params"]]
            masters = self.fp32_master_weights
            state_dict["fp32_master_weights"] = {i: masters[p][0] for i, p in enumerate(params) if p in masters}
            return state_dict

        def load_state_dict(self, state_dict):
            state_dict = dict(state_dict)
            loaded = state_dict.pop("fp32_master_weights", {})
            with torch.no_grad():
                swapped = self._swap_in_fp32(grads=False, loaded=loaded)
                try:
                    super().load_state_dict(state_dict)  # floating state takes each parameter's dtype: FP32 here
                finally:
                    self._swap_back(swapped, copy_back=False)

    FP32MasterWeights.__name__ = optimizer_class.__name__ + "WithFP32MasterWeights"
    return FP32MasterWeights
'''


FP32_GRAD_NORM = "clip_grad_norm_fp32_"

# gpu-compatible mode: torch.nn.utils.clip_grad_norm_ computes the norm in the gradients' dtype,
# and bf16 gradients give a bf16 norm: measured on the XLA CPU device with torch-xla 2.9, 10.125
# for a true 10.0206 over 1M gradients (1% off; the legacy run gets the same 10.125). The
# clipping the master weights then apply is computed in FP32, as torch's own code does it
# (torch/nn/utils/clip_grad.py: per-tensor norms, the norm of the norms, the coefficient
# max_norm / (total + 1e-6) clamped to 1, gradients multiplied in place) with
# torch.linalg.vector_norm only, which every torch the scripts may run on has (>= 1.10).
FP32_GRAD_NORM_SOURCE = '''
def clip_grad_norm_fp32_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """torch.nn.utils.clip_grad_norm_ with the gradient norm computed in FP32; returns it (FP32).

    Added by bf16-migrate (gpu-compatible mode, replacing the legacy bf16 environment switch):
    the model's gradients are bf16, and their norm computed in bf16 is about 1% off over a
    million elements. `foreach` is accepted for compatibility and not used.
    """
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    norm_type = float(norm_type)
    norms = [torch.linalg.vector_norm(g.detach().float(), norm_type) for g in grads]
    total_norm = torch.linalg.vector_norm(torch.stack([n.to(grads[0].device) for n in norms]), norm_type)
    if error_if_nonfinite and (torch.isnan(total_norm) or torch.isinf(total_norm)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be clipped.")
    clip_coef = torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(clip_coef.to(g.device))
    return total_norm
'''


BF16_FLOATING = "floating_to_bf16"
BF16_INPUTS_HOOK = "bf16_inputs_hook"

# The run-time input cast (inputs.py): what the legacy switch did to every tensor moved to the
# device, done at the model's door. A few lines of our own rather than torch's pytree
# (`torch.utils._pytree.tree_map_only` would do it in one line, but it is private API, and this
# code stays in the user's script after bf16-migrate is uninstalled).
BF16_INPUTS_SOURCE = '''
def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)
'''


FP32_FLOAT64 = "float64_to_float32"
FP32_INPUTS_HOOK = "float32_inputs_hook"

# The run-time input cast of the modes that keep the model FP32 (changes/float32_inputs.py): the
# legacy switch made a float64 tensor on the device bf16, so a script could feed NumPy's float64
# to its model; autocast casts float16/float32/bfloat16 arguments only, never float64 (PyTorch's
# aten/src/ATen/autocast_mode.h, `is_eligible`), so without the switch such a batch reaches the FP32
# model as float64 and XLA refuses the mix. Float32 is the dtype of the model's parameters, the one
# autocast casts from; integer and float32 tensors are left. Our own lines, as the bf16 hook's.
FP32_INPUTS_SOURCE = '''
def float64_to_float32(batch):
    """Cast the float64 tensors in `batch` to float32, leaving every other tensor (integer token
    ids and labels, float32, bf16) and everything else as it is.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which a float64
    tensor on the XLA device was computed in low precision; autocast casts float32, not float64):
    `batch` is a tensor, or a list, tuple, namedtuple or dict of them, nested; containers are
    rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.float32) if batch.dtype == torch.float64 else batch
    if isinstance(batch, dict):
        return {key: float64_to_float32(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(float64_to_float32(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(float64_to_float32(value) for value in batch)
    return batch


def float32_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's float64 inputs become float32."""
    return float64_to_float32(args), float64_to_float32(kwargs)
'''


DOWNCAST_FLOATING = "downcast_floating"

# The run-time cast of a tensor of a dtype the code does not tell, under XLA_DOWNCAST_BF16
# (device_tensors.py): that switch made a float32 tensor on the device bf16 and a float64 one float32
# (torch-xla's torch_xla/csrc/dtype.cpp, MaybeDowncastToXlaDeviceType); floating_to_bf16 would make a
# NumPy float64 table bf16, one precision below the legacy run's (a hunt's standardised columns kept 9
# distinct values of 256). Our own lines, as the bf16 cast's.
DOWNCAST_FLOATING_SOURCE = '''
def downcast_floating(batch):
    """Cast `batch` as the legacy bf16 downcast environment switch held it on the device: float64
    tensors to float32, other floating tensors to torch.bfloat16; integer tensors and everything else
    as they are.

    Added by bf16-migrate (replacing the legacy bf16 downcast environment switch, under which a float32
    tensor on the XLA device was bf16 and a float64 one float32) where the code does not tell the
    dtype: `batch` is a tensor, or a list, tuple, namedtuple or dict of them, nested; containers are
    rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        if batch.dtype == torch.float64:
            return batch.to(torch.float32)
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: downcast_floating(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(downcast_floating(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(downcast_floating(value) for value in batch)
    return batch
'''


HOST_FLOAT32 = "host_float32"

# The run-time cast at the host edge (host_exits.py): what the legacy switch did to every floating
# tensor that left the device, for a value whose dtype the code does not tell (a model's output, a
# state dict, a checkpoint's dict). The copy to the host comes first and the cast runs there: a cast
# on the device would be one more XLA graph to compile (measured with torch-xla 2.9 on the XLA CPU
# device: `t.cpu().float()` compiles nothing, `t.float().cpu()` one graph; bench/RESULTS.md,
# "The host edge"). `copy.copy` keeps a container's type and a state dict's `_metadata`, which
# `load_state_dict` reads.
HOST_FLOAT32_SOURCE = '''
def host_float32(data, back_to_device=False):
    """Return `data` with every bf16 tensor in it copied to the host and made float32 there (and,
    with `back_to_device`, moved back to the device it was on); integer, float32 and float64
    tensors and everything else but modules are returned as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor that left the XLA device was float32): `data` is a tensor, or a list, tuple,
    namedtuple or dict of them (a state dict, a checkpoint), nested; containers are copied with
    their type, a state dict's metadata kept, so `load_state_dict` reads the result as before.
    `torch.save` writes an XLA tensor as one: `back_to_device=True` keeps it so, as the legacy
    checkpoint held it. A module is copied, its bf16 parameters and buffers made float32 where they
    are, without the input hooks bf16-migrate registered on it (functions of the migrated script,
    which a `torch.save`d module would need to be loaded anywhere else).
    """
    import copy

    if isinstance(data, torch.nn.Module):
        module = copy.deepcopy(data)
        for sub in module.modules():
            for key, hook in list(sub._forward_pre_hooks.items()):
                if getattr(hook, "__name__", None) in ("bf16_inputs_hook", "float32_inputs_hook"):
                    del sub._forward_pre_hooks[key]
                    sub._forward_pre_hooks_with_kwargs.pop(key, None)
        return module._apply(lambda t: t.float() if t.dtype == torch.bfloat16 else t)
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.bfloat16:
            return data
        host = data.cpu().float()
        return host.to(data.device) if back_to_device else host
    if isinstance(data, dict):
        out = copy.copy(data)
        for key, value in data.items():
            out[key] = host_float32(value, back_to_device)
        return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(host_float32(value, back_to_device) for value in data))
    if isinstance(data, (list, tuple)):
        return type(data)(host_float32(value, back_to_device) for value in data)
    return data
'''


BF16_ON_XLA = "bf16_on_xla"

# The run-time cast of a tensor the script makes where the code does not tell the device
# (device_tensors.py: `torch.zeros(n, device=args.device)`, `(acts <= 0).float()` of activations a
# hook collected): under the switch a floating tensor was bf16 on the XLA device and as made
# elsewhere (torch-xla's torch_xla/csrc/dtype.cpp, MaybeDowncastToXlaDeviceType, applies to XLA
# tensors only). The device is the tensor's own, read when the line runs.
BF16_ON_XLA_SOURCE = '''
def bf16_on_xla(tensor):
    """Return `tensor` as the legacy bf16 environment switch held it: a floating tensor on an XLA
    device as torch.bfloat16; one on another device (the host's CPU) and an integer or boolean
    one, and anything that is not a tensor, as it is.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16) where the code does not tell on which device the
    tensor is made.
    """
    if isinstance(tensor, torch.Tensor) and tensor.device.type == "xla" and tensor.is_floating_point():
        return tensor.to(torch.bfloat16)
    return tensor
'''


DOWNCAST_BF16 = "downcast_bf16"

# The model cast of a script that ran under XLA_DOWNCAST_BF16 and builds a module in float64 on
# purpose (model_reach.float64_modules): under the switch that module was float32 on the device and
# the rest bf16 (torch-xla's torch_xla/csrc/dtype.cpp). `Module.to(dtype)` casts every floating
# parameter to one dtype: the float64 module would go through bf16, and built in float32 instead it
# would draw other initial values from the same seed. Torch has no public per-dtype conversion of a
# module; `Module._apply` is what `Module.to` and `Module.float` are made of (host_float32 uses it too).
DOWNCAST_BF16_SOURCE = '''
def downcast_bf16(module):
    """Cast `module` in place as the legacy bf16 downcast environment switch held it on the XLA
    device: float32 parameters and buffers become torch.bfloat16, float64 ones float32, every other
    one (integer buffers) stays as it is. Returns `module`.

    Added by bf16-migrate in place of `module.to(torch.bfloat16)` for a model with float64 state (a
    submodule built in float64, a parameter or buffer made from float64 data), which that cast would
    round to bf16.
    """
    dtypes = {torch.float32: torch.bfloat16, torch.float64: torch.float32}
    return module._apply(lambda t: t.to(dtypes[t.dtype]) if t.dtype in dtypes else t)
'''


HELPER_SOURCES = {
    BF16_FLOATING: BF16_INPUTS_SOURCE,
    BF16_INPUTS_HOOK: BF16_INPUTS_SOURCE,
    MASTER_WEIGHTS_FACTORY: MASTER_WEIGHTS_SOURCE,
    FP32_GRAD_NORM: FP32_GRAD_NORM_SOURCE,
    HOST_FLOAT32: HOST_FLOAT32_SOURCE,
    BF16_ON_XLA: BF16_ON_XLA_SOURCE,
    FP32_FLOAT64: FP32_INPUTS_SOURCE,
    FP32_INPUTS_HOOK: FP32_INPUTS_SOURCE,
    DOWNCAST_BF16: DOWNCAST_BF16_SOURCE,
    DOWNCAST_FLOATING: DOWNCAST_FLOATING_SOURCE,
}
"""Every function the codemod may write into a script, by name, with the source that defines it."""


def helpers_module_source(newline: str = "\n") -> str:
    """The text of the module ``--helpers-module`` writes once per directory instead of a copy of
    the helpers in every script: all of them, after ``import torch``; line ends ``newline``."""
    sources = list(dict.fromkeys(HELPER_SOURCES.values()))
    text = (
        '"""Functions bf16-migrate writes for the migrated scripts of this directory, which import them.\n\n'
        f"{EMITTED_MARK}--helpers-module): they replace the legacy bf16 environment switch; each\n"
        'docstring says what it does. Nothing here imports bf16_migrate."""\n\n'
        "import torch\n" + "".join("\n\n" + src.strip("\n") + "\n" for src in sources)
    )
    return text.replace("\n", newline)


def import_helpers(module: str, names: list[str]) -> cst.SimpleStatementLine:
    """``from <module> import <names>`` (names in the order given)."""
    dotted = cst.parse_expression(module)
    assert isinstance(dotted, (cst.Name, cst.Attribute)), f"{module!r} is not a dotted module name"
    return cst.SimpleStatementLine(
        body=[
            cst.ImportFrom(
                module=dotted,
                names=[cst.ImportAlias(name=cst.Name(n)) for n in names],
            )
        ]
    )


@functools.cache
def _helper_statements(source: str) -> Sequence[cst.BaseStatement]:
    """The statements of a helper's source, parsed once per process (a migration that adds a
    helper parsed its text each time, a fifth of a small script's migration). libcst's nodes do
    not change, so the migrations share them; each caller makes its own top-level node
    (``with_changes``)."""
    return cst.parse_module(source.lstrip("\n")).body


def bf16_inputs_helper() -> list[cst.BaseStatement]:
    """``floating_to_bf16`` and ``bf16_inputs_hook`` as two top-level FunctionDefs, each with
    the two blank lines PEP 8 puts before a top-level definition."""
    body = _helper_statements(BF16_INPUTS_SOURCE)
    return [st.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]) for st in body]


def float32_inputs_helper() -> list[cst.BaseStatement]:
    """``float64_to_float32`` and ``float32_inputs_hook`` as two top-level FunctionDefs, each with
    the two blank lines PEP 8 puts before a top-level definition."""
    body = _helper_statements(FP32_INPUTS_SOURCE)
    return [st.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]) for st in body]


def forward_pre_hook_statement(model: str, hook: str) -> cst.BaseStatement:
    """``<model>.register_forward_pre_hook(<hook>, with_kwargs=True)`` as a statement (``model``:
    the code of the module, ``hook``: the name of a hook of :data:`HELPER_SOURCES`)."""
    return statement(f"{model}.register_forward_pre_hook({hook}, with_kwargs=True)")


def floating_to_bf16_call(expr: cst.BaseExpression, guard: cst.BaseExpression | None = None) -> cst.BaseExpression:
    """``floating_to_bf16(expr)``; with a ``guard``, ``floating_to_bf16(expr) if guard else expr``."""
    call = cst.Call(func=cst.Name(BF16_FLOATING), args=[cst.Arg(expr)])
    if guard is None:
        return call
    return cst.IfExp(test=guard.deep_clone(), body=call, orelse=expr)


def _top_level_function(source: str) -> cst.FunctionDef:
    """The one function ``source`` defines, as a FunctionDef node with the two blank lines PEP 8 puts
    before a top-level definition."""
    node = _helper_statements(source)[0]
    assert isinstance(node, cst.FunctionDef), "a helper's source is one function"
    return node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])


def downcast_floating_helper() -> cst.FunctionDef:
    """The ``downcast_floating(batch)`` function as a FunctionDef node, with the two blank lines PEP 8
    puts before a top-level definition."""
    return _top_level_function(DOWNCAST_FLOATING_SOURCE)


def downcast_floating_call(expr: cst.BaseExpression, guard: cst.BaseExpression | None = None) -> cst.BaseExpression:
    """``downcast_floating(expr)``; with a ``guard``, ``downcast_floating(expr) if guard else expr``."""
    call = cst.Call(func=cst.Name(DOWNCAST_FLOATING), args=[cst.Arg(expr)])
    if guard is None:
        return call
    return cst.IfExp(test=guard.deep_clone(), body=call, orelse=expr)


def guarded(statements: list[cst.BaseStatement], guard: cst.BaseExpression | None) -> list[cst.BaseStatement]:
    """``statements`` as they are, or all in one ``if guard:`` block."""
    if guard is None:
        return list(statements)
    return [cst.If(test=guard.deep_clone(), body=cst.IndentedBlock(body=list(statements)))]


def fp32_grad_norm_helper() -> cst.FunctionDef:
    """The ``clip_grad_norm_fp32_(parameters, max_norm, ...)`` function as a FunctionDef node,
    with the two blank lines PEP 8 puts before a top-level definition."""
    return _top_level_function(FP32_GRAD_NORM_SOURCE)


def host_float32_helper() -> cst.FunctionDef:
    """The ``host_float32(data)`` function as a FunctionDef node, with the two blank lines PEP 8
    puts before a top-level definition."""
    return _top_level_function(HOST_FLOAT32_SOURCE)


def bf16_on_xla_helper() -> cst.FunctionDef:
    """The ``bf16_on_xla(tensor)`` function as a FunctionDef node, with the two blank lines PEP 8
    puts before a top-level definition."""
    return _top_level_function(BF16_ON_XLA_SOURCE)


def downcast_bf16_helper() -> cst.FunctionDef:
    """The ``downcast_bf16(module)`` function as a FunctionDef node, with the two blank lines PEP 8
    puts before a top-level definition."""
    return _top_level_function(DOWNCAST_BF16_SOURCE)


def bf16_on_xla_call(expr: cst.BaseExpression, guard: cst.BaseExpression | None = None) -> cst.BaseExpression:
    """``bf16_on_xla(expr)``; with a ``guard``, ``(bf16_on_xla(expr) if guard else expr)``."""
    call = cst.Call(func=cst.Name(BF16_ON_XLA), args=[cst.Arg(expr)])
    if guard is None:
        return call
    return cst.IfExp(test=guard.deep_clone(), body=call, orelse=expr, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def host_float32_call(expr: cst.BaseExpression, back_to_device: bool = False) -> cst.Call:
    """``host_float32(expr)``, or ``host_float32(expr, back_to_device=True)``."""
    args = [cst.Arg(expr)]
    if back_to_device:
        args = [
            cst.Arg(expr, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(
                cst.Name("True"),
                keyword=cst.Name("back_to_device"),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                ),
            ),
        ]
    return cst.Call(func=cst.Name(HOST_FLOAT32), args=args)


def float_after(expr: cst.BaseExpression) -> cst.Call:
    """``expr.float()`` (``expr`` is a call or another atom: a copy to the host)."""
    return cst.Call(func=cst.Attribute(value=expr, attr=cst.Name("float")))


def host_float_before(expr: cst.BaseExpression) -> cst.Call:
    """``expr.cpu().float()``: a floating device tensor copied to the host and made float32 there, before
    a method that copies it itself and gives no tensor back (``.numpy(force=True)``)."""
    value = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if _needs_parens(expr) else expr
    return cst.Call(
        func=cst.Attribute(
            value=cst.Call(func=cst.Attribute(value=value, attr=cst.Name("cpu"))), attr=cst.Name("float")
        )
    )


def _needs_parens(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` needs parentheses to take an attribute (an operation, not an atom or a call)."""
    return isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.BooleanOperation, cst.Comparison, cst.IfExp))


def float_of(node: cst.CSTNode) -> cst.Call:
    """``node.float()``, parenthesised where it is an operation (``(a - b).float()``)."""
    assert isinstance(node, cst.BaseExpression), "an operand is an expression"
    value = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if _needs_parens(node) else node
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("float")))


def double_after(expr: cst.BaseExpression) -> cst.Call:
    """``expr.double()`` (a copy to the host of what the legacy run reported float64)."""
    return cst.Call(func=cst.Attribute(value=expr, attr=cst.Name("double")))


def master_weights_helper() -> cst.FunctionDef:
    """The ``with_fp32_master_weights(optimizer_class)`` factory as a FunctionDef node, with the
    two blank lines PEP 8 puts before a top-level definition."""
    return _top_level_function(MASTER_WEIGHTS_SOURCE)


class _NewlineStyle(cst.CSTTransformer):
    def __init__(self, newline: str) -> None:
        super().__init__()
        self.newline = newline

    def leave_SimpleString(self, original_node, updated_node):
        return updated_node.with_changes(value=_LINE_BREAK.sub(self.newline, updated_node.value))

    def leave_FormattedStringText(self, original_node, updated_node):
        return updated_node.with_changes(value=_LINE_BREAK.sub(self.newline, updated_node.value))


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def in_newline_style(statements: list[cst.BaseStatement], newline: str) -> list[cst.BaseStatement]:
    """``statements`` (code to insert) with every line break inside their string tokens written
    as ``newline`` (the file's :attr:`libcst.Module.default_newline`).

    libcst renders the line ends *between* tokens with the module's ``default_newline`` (a
    :class:`libcst.Newline` whose ``value`` is None, libcst's node reference), but a string
    token as written: ``SimpleString.value`` is the textual representation of the string as in
    the source, quotes, prefix and escapes included. So the multi-line docstrings of the helpers
    above, parsed from this module's LF source, would put bare LFs into a CRLF (or CR) file.
    The value of the literal does not change: Python accepts the three line ends ("Physical
    lines" in the language reference) and reads each, inside a literal too, as ``\\n``."""
    if newline == "\n":
        return list(statements)
    style = _NewlineStyle(newline)
    # a transformer that only rewrites string tokens returns a statement for a statement
    return [
        cast(cst.BaseStatement, statement.visit(style)) if _has_line_break(statement) else statement
        for statement in statements
    ]


def _has_line_break(node: cst.CSTNode) -> bool:
    strings = m.findall(node, m.SimpleString() | m.FormattedStringText())
    return any(
        "\n" in s.value or "\r" in s.value
        for s in strings
        if isinstance(s, (cst.SimpleString, cst.FormattedStringText))
    )


def attr(dotted: str) -> cst.BaseExpression:
    """``"torch.bfloat16"`` as an expression node."""
    return cst.parse_expression(dotted)


def cast_to_bf16(expr: cst.BaseExpression, guard: cst.BaseExpression | None = None) -> cst.BaseExpression:
    """``expr.to(torch.bfloat16)``, parenthesising ``expr`` when it is not an atom; with a
    ``guard``, ``expr.to(torch.bfloat16) if guard else expr``."""
    if guard is not None:
        return cst.IfExp(test=guard.deep_clone(), body=cast_to_bf16(expr), orelse=expr)
    atom = isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
    if not atom and not expr.lpar:
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(
        func=cst.Attribute(value=expr, attr=cst.Name("to")),
        args=[cst.Arg(attr("torch.bfloat16"))],
    )


def statement(code: str, guard: cst.BaseExpression | None = None) -> cst.BaseStatement:
    """One statement from source (``code``), under ``if guard:`` when a guard is given."""
    line = cst.parse_statement(code + "\n")
    if guard is None:
        return line
    return cst.If(test=guard.deep_clone(), body=cst.IndentedBlock(body=[line]))


def model_cast_statement(
    model: cst.BaseExpression, guard: cst.BaseExpression | None = None, downcast: bool = False
) -> cst.BaseStatement:
    """``<model>.to(torch.bfloat16)`` as a statement (keeps parameter identity, so it is safe
    before or after the optimizer is built unless the overwrite-on-conversion flag is set:
    torch.nn.Module._apply swaps ``param.data`` unless
    ``torch.__future__.set_overwrite_module_params_on_conversion(True)`` is set); with ``downcast``,
    ``downcast_bf16(<model>)`` (float64 parameters to float32, float32 ones to bf16; the caller
    adds :func:`downcast_bf16_helper` to the file)."""
    call = (
        cst.Call(func=cst.Name(DOWNCAST_BF16), args=[cst.Arg(model.deep_clone())])
        if downcast
        else cst.Call(
            func=cst.Attribute(value=model.deep_clone(), attr=cst.Name("to")),
            args=[cst.Arg(attr("torch.bfloat16"))],
        )
    )
    line = cst.SimpleStatementLine([cst.Expr(call)])
    if guard is None:
        return line
    return cst.If(test=guard.deep_clone(), body=cst.IndentedBlock(body=[line]))


def autocast_with(body: list[cst.BaseStatement], guard: cst.BaseExpression | None = None) -> cst.With:
    """``with torch.autocast("xla", dtype=torch.bfloat16):`` around ``body`` (forward + loss
    only, per torch-xla's AMP guide; ``torch_xla.amp.autocast`` raises AttributeError off
    TPU/Neuron in torch-xla 2.9, measured on the XLA CPU device)."""
    template = cst.parse_statement('with torch.autocast("xla", dtype=torch.bfloat16):\n    pass\n')
    assert isinstance(template, cst.With)
    if guard is not None:
        enabled = guard.deep_clone()
        if not isinstance(guard, (cst.Comparison, cst.UnaryOperation)):
            enabled = cst.Call(func=cst.Name("bool"), args=[cst.Arg(enabled)])
        call = template.items[0].item
        assert isinstance(call, cst.Call)
        template = template.with_changes(
            items=[
                template.items[0].with_changes(
                    item=call.with_changes(
                        args=[
                            *call.args[:-1],
                            call.args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                            cst.Arg(
                                enabled,
                                keyword=cst.Name("enabled"),
                                equal=cst.AssignEqual(
                                    whitespace_before=cst.SimpleWhitespace(""),
                                    whitespace_after=cst.SimpleWhitespace(""),
                                ),
                            ),
                        ]
                    )
                )
            ]
        )
    return template.with_changes(body=cst.IndentedBlock(body=body))
