"""model-code-dtypes: the tensors the model's own code and the file's optimizer classes make in f32
follow the dtype of what they meet, deliberate f32 islands are kept (``rules/model_code.toml``;
under the legacy switch every f32 tensor on the device was bf16: torch-xla
``torch_xla/csrc/dtype.cpp``). The audit ran, and stopped the migration where a place cannot
follow, before any change (:mod:`..model_code`); here its edits are written."""

from __future__ import annotations

from ...rules import Emit
from ..model_code import plan_model_code
from .migration import Migration, Planned

EMIT = Emit.MODEL_CODE_DTYPES


def plan(m: Migration, planned: Planned) -> Planned:
    """The audit's follows, casts and kept islands (BFM080, BFM082, BFM087, BFM088)."""
    plan_model_code(m.ctx, m.plan, m.audit)
    return planned
