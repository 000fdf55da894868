"""torch's fused oneDNN linear kernels, behind one door: the only module that calls torch's private
``torch.ops.mkldnn._*`` ops, and only with the torch releases they were tested with.

The ops are the ones ``torch.compile`` itself emits on CPU: ``_reorder_linear_weight`` (a weight in oneDNN's blocked
layout), ``_linear_pointwise`` (product + bias, optionally + exact GELU, in one call) and its ``binary`` overload
(product + bias + a residual add). They save the fast encoder (:mod:`diagnose.embed.fast`) the memory-bound bias,
GELU and residual passes of a bf16 linear layer, which cost as much as its AMX product. Being private, a torch
release may rename them or change their arguments without notice, so :func:`fused_kernels` gives them only when

1. ``torch.__version__`` (without its local ``+cpu`` part) is one of :data:`TESTED_TORCH`,
2. the ops exist and oneDNN reports bf16 support, and
3. each agrees with the plain fp32 computation on a random bf16 probe (within :data:`CHECK_RTOL`);

otherwise it returns None and the fast encoder keeps torch's public ``nn.Linear`` layers in bf16 (the plain bf16
path: same vectors within bf16 rounding, slower). ``tests/test_fast_encoder.py`` encodes with both paths.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

log = logging.getLogger("diagnose.fast_encoder")

#: torch releases the private ops were tested with (``torch.__version__`` without a local part such as ``+cpu``).
TESTED_TORCH = ("2.13.0",)
#: Relative tolerance of the load-time check of a fused kernel against the plain computation.
CHECK_RTOL = 0.05
_OPS = ("_reorder_linear_weight", "_linear_pointwise", "_is_mkldnn_bf16_supported")


def is_tested(torch_version: str) -> bool:
    """Whether ``torch_version`` (``torch.__version__``) is a release the private ops were tested with."""
    return torch_version.split("+")[0] in TESTED_TORCH


@dataclass(frozen=True)
class FusedKernels:
    """The three fused calls (tensors in bf16; ``weight`` as :meth:`reorder` gives it)."""

    ops: Any  # torch.ops.mkldnn

    def reorder(self, weight: Any) -> Any:
        """``weight`` (out x in) in oneDNN's blocked layout, for :meth:`linear` and :meth:`linear_add`."""
        return self.ops._reorder_linear_weight(weight, None)

    def linear(self, x: Any, weight: Any, bias: Any, gelu: bool = False) -> Any:
        """``x @ W.T + b``, then the exact (erf) GELU when ``gelu``; ``x``: 2-D."""
        if gelu:
            return self.ops._linear_pointwise(x, weight, bias, "gelu", [], "none")
        return self.ops._linear_pointwise(x, weight, bias, "none", [], "")

    def linear_add(self, x: Any, residual: Any, weight: Any, bias: Any) -> Any:
        """``x @ W.T + b + residual``; ``x`` and ``residual``: 2-D."""
        return self.ops._linear_pointwise.binary(x, residual, weight, bias, "add")


@lru_cache(maxsize=1)
def fused_kernels() -> FusedKernels | None:
    """The fused kernels when this torch is a tested release, has them, and they pass the probe; else None (with a
    log line saying why)."""
    import torch

    if not is_tested(torch.__version__):
        log.info(
            "fused oneDNN kernels not used: torch %s is not a tested release %s",
            torch.__version__,
            TESTED_TORCH,
        )
        return None
    ops = getattr(torch.ops, "mkldnn", None)
    if ops is None or not all(hasattr(ops, name) for name in _OPS):
        log.info("fused oneDNN kernels not used: this torch build has no mkldnn linear ops")
        return None
    kernels = FusedKernels(ops)
    try:
        if not ops._is_mkldnn_bf16_supported():
            return None
        return kernels if _agree(kernels) else None
    except Exception as e:  # a torch build without these kernels, or a changed signature
        log.debug("fused oneDNN linear kernels unavailable: %s", e)
        return None


def _agree(kernels: FusedKernels) -> bool:
    """Each fused call within :data:`CHECK_RTOL` of the fp32 computation on a random bf16 probe."""
    import torch

    g = torch.Generator().manual_seed(0)
    x = torch.randn(37, 64, generator=g).bfloat16()
    w = (torch.randn(48, 64, generator=g) / 8).bfloat16()
    b = torch.randn(48, generator=g).bfloat16()
    r = torch.randn(37, 48, generator=g).bfloat16()
    pw = kernels.reorder(w)
    ref = torch.nn.functional.linear(x.float(), w.float(), b.float())
    pairs = [
        (kernels.linear(x, pw, b), ref),
        (kernels.linear(x, pw, b, gelu=True), torch.nn.functional.gelu(ref)),
        (kernels.linear_add(x, r, pw, b), ref + r.float()),
    ]
    for out, want in pairs:
        err = (out.float() - want).abs().max().item()
        if not err <= CHECK_RTOL * max(1.0, want.abs().max().item()):
            return False
    return True
