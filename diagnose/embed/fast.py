"""The fast encoder path: the same sentence-transformers model with its transformer in bfloat16 on the CPU.

Why bfloat16 and not int8 or ONNX Runtime (measured side by side on NFCorpus abstracts, see ``bench/RESULTS.md``,
section "fast encoder"; the int8 and ONNX rows are in its git history): on a CPU with AMX / AVX512-BF16 a bf16
matrix product costs ~1/5 of the fp32 one, and the vectors stay within cosine ~0.9999 of fp32 (bf16 keeps fp32's
exponent range, so no calibration and no outlier problem), while int8 (torch or ONNX Runtime) either loses accuracy
(per-tensor: cosine 0.92-0.95) or speed (per-channel ONNX Runtime int8: cosine 0.995 but 1.3-2.5x, its attention
core stays fp32).

What :func:`to_bf16` does to a loaded ``SentenceTransformer``:

1. the first module (the Hugging Face transformer) is cast to bfloat16; a forward hook casts its token embeddings
   back to float32, so pooling (mean over the attention mask) and normalisation run in fp32, as do any modules
   after it;
2. when torch's fused oneDNN kernels are usable (:func:`diagnose.embed.onednn.fused_kernels`: private ops, used
   only with the torch releases they were tested with, when they exist and agree with plain torch on a probe at
   load time), every ``nn.Linear`` of the transformer becomes one oneDNN call with its bias fused, BERT's
   intermediate dense + exact GELU one call, and BERT's output dense + residual add one call. Without the fusion a
   bf16 linear layer spends as long on its memory-bound bias add, GELU and residual add as on the AMX product
   itself. Otherwise (another torch, kernels missing or disagreeing, or ``fuse=False``) the layers stay torch's
   public ``nn.Linear`` in bf16 (plain bf16: the same vectors within bf16 rounding).

When the fast path applies (:func:`fast_supported`): CPU device and a CPU with bf16 instructions (``avx512_bf16``
or ``amx_bf16`` in ``/proc/cpuinfo``). Elsewhere (no bf16 instructions, where bf16 is emulated and slower than
fp32; other operating systems; GPUs) :func:`fast_encoder` returns the exact encoder with one warning (CPU) or a
log line (GPU). The check reads ``/proc/cpuinfo`` only: a run served from the embedding cache still never imports
torch.

Cache identity: ``name`` is the exact encoder's name + ``"+bf16"`` (e.g. ``st-sha256:90e6...+bf16``), so fast and
exact vectors never share an embedding-cache entry. If the conversion fails when the weights are loaded (first
use), the encoder warns once and encodes with the exact fp32 model under the same name (those vectors are the
exact ones, within cosine ~1e-4 of the bf16 ones).
"""

from __future__ import annotations

import inspect
import logging
import sys
import warnings
from collections.abc import MutableMapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from diagnose.embed.encoders import SentenceTransformerEncoder
from diagnose.embed.onednn import FusedKernels, fused_kernels

log = logging.getLogger("diagnose.fast_encoder")  # the name it logged under before the move

#: Suffix of the cache identity (``encoder.name``) of a fast encoder; also what :attr:`FastEncoder.precision` says.
FAST_PRECISION = "bf16"


class FastPathWarning(UserWarning):
    """The fast (bf16) encoder path is not available here; the exact fp32 path is used instead."""


# ---------------------------------------------------------------------------------------------------------------
# When the fast path applies
# ---------------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def fast_supported(device: str = "cpu") -> tuple[bool, str]:
    """``(True, "")`` when the bf16 path is worth using on ``device``, else ``(False, reason)``.

    Only the CPU is considered: a CPU with ``avx512_bf16`` or ``amx_bf16`` (Intel Cooper Lake / Sapphire Rapids
    and later, AMD Zen 4 and later) runs bf16 matrix products natively; without them oneDNN emulates bf16 and the
    "fast" path would be slower than fp32. Read from ``/proc/cpuinfo`` (Linux), so no torch import.
    """
    if str(device).split(":")[0] != "cpu":
        return False, f"the fast path is for CPUs; on {device!r} the exact fp32 path is used"
    if not sys.platform.startswith("linux"):
        return False, f"bf16 CPU support is only detected on Linux (this is {sys.platform})"
    flags = _cpu_flags()
    if not flags & {"avx512_bf16", "amx_bf16"}:
        return False, "this CPU has no bf16 instructions (avx512_bf16 / amx_bf16), so bf16 would be slower"
    return True, ""


# ---------------------------------------------------------------------------------------------------------------
# bf16 conversion with fused oneDNN linear layers
# ---------------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _modules() -> tuple[type, type, type]:
    """The fused module classes (defined lazily: they subclass ``torch.nn.Module``)."""
    import torch
    from torch import nn

    class FusedLinear(nn.Module):
        """``y = act(x @ W.T + b)`` as one oneDNN call; ``act`` is ``"none"`` or ``"gelu"`` (exact, erf)."""

        def __init__(self, linear: nn.Linear, kernels: FusedKernels, act: str = "none") -> None:
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            self.act, self.kernels = act, kernels
            self.weight = nn.Parameter(kernels.reorder(linear.weight.detach()), requires_grad=False)
            self.bias = (
                None if linear.bias is None else nn.Parameter(linear.bias.detach(), requires_grad=False)
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            lead = x.shape[:-1]
            x2 = x.reshape(-1, self.in_features)
            y = self.kernels.linear(x2, self.weight, self.bias, gelu=self.act == "gelu")
            return y.reshape(*lead, self.out_features)

    class FusedAddNorm(nn.Module):
        """BERT's ``*Output``: ``LayerNorm(x @ W.T + b + input_tensor)``, the product, bias and residual in one call.

        (Dropout is the identity at inference.)
        """

        def __init__(self, dense: nn.Linear, layer_norm: nn.Module, kernels: FusedKernels) -> None:
            super().__init__()
            self.dense = FusedLinear(dense, kernels)
            self.LayerNorm = layer_norm

        def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
            d = self.dense
            y = d.kernels.linear_add(
                hidden_states.reshape(-1, d.in_features),
                input_tensor.reshape(-1, d.out_features),
                d.weight,
                d.bias,
            )
            return self.LayerNorm(y.reshape(input_tensor.shape))

    return FusedLinear, FusedAddNorm, nn.Linear


def _is_exact_gelu(act: Any) -> bool:
    import torch

    if isinstance(act, torch.nn.GELU):
        return act.approximate == "none"
    return type(act).__name__ == "GELUActivation" and getattr(act, "act", None) is torch.nn.functional.gelu


def _fuse_linears(module: Any, kernels: FusedKernels) -> dict[str, int]:
    """Replace, in place, the bf16 linear layers of ``module`` by fused oneDNN ones; returns counts per kind.

    Every replacement is built first (the step that can fail: weight reordering) and only then swapped in, so a
    failure leaves ``module`` untouched.
    """
    from torch import nn

    fused_linear, fused_add_norm, linear = _modules()
    counts = {"linear": 0, "linear+gelu": 0, "linear+add+layernorm": 0}
    swaps: list[tuple[nn.Module, str, nn.Module]] = []

    def visit(parent: nn.Module) -> None:
        for child_name, child in list(parent.named_children()):
            cls = type(child).__name__
            dense = getattr(child, "dense", None)
            if (
                cls.endswith("Intermediate")
                and type(dense) is linear
                and _is_exact_gelu(getattr(child, "intermediate_act_fn", None))
            ):
                swaps.extend(
                    [
                        (child, "dense", fused_linear(dense, kernels, act="gelu")),
                        (child, "intermediate_act_fn", nn.Identity()),
                    ]
                )
                counts["linear+gelu"] += 1
            elif (
                cls.endswith("Output")
                and type(dense) is linear
                and isinstance(getattr(child, "LayerNorm", None), nn.LayerNorm)
                and set(dict(child.named_children())) <= {"dense", "LayerNorm", "dropout"}
                and list(inspect.signature(child.forward).parameters) == ["hidden_states", "input_tensor"]
            ):
                swaps.append((parent, child_name, fused_add_norm(dense, child.LayerNorm, kernels)))
                counts["linear+add+layernorm"] += 1
            elif type(child) is linear:
                swaps.append((parent, child_name, fused_linear(child, kernels)))
                counts["linear"] += 1
            else:
                visit(child)

    visit(module)
    for parent, child_name, new in swaps:
        setattr(parent, child_name, new)
    return counts


def _float_output_hook(module: Any, args: Any, output: Any) -> Any:
    """Forward hook on the bf16 transformer: its token embeddings leave it as float32 (pooling runs in fp32)."""
    import torch

    key = getattr(module, "module_output_name", "token_embeddings")
    # ``output`` is the features mapping: a dict, or transformers' BatchEncoding (a UserDict, not a dict)
    value = output.get(key) if isinstance(output, MutableMapping) else None
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        output[key] = value.float()
    return output


def to_bf16(model: Any, *, fuse: bool = True) -> dict[str, int]:
    """Convert a loaded ``SentenceTransformer`` in place to the fast path (see the module docstring); ``fuse=False``:
    plain bf16 (torch's public layers only), whatever the kernels.

    Returns the counts of fused layers per kind (all 0 when the fused kernels are unavailable: plain bf16).
    Raises ``ValueError`` when its first module is not a transformer with floating-point weights; any exception
    may leave the model half converted, so the caller must not use it afterwards (:class:`FastEncoder` reloads).
    """
    import torch

    first = model[0]
    inner = getattr(first, "auto_model", None) or getattr(first, "model", None)
    if not isinstance(inner, torch.nn.Module) or not any(p.is_floating_point() for p in inner.parameters()):
        raise ValueError(f"its first module ({type(first).__name__}) is not a transformer with weights")
    kernels = fused_kernels() if fuse else None
    first.to(torch.bfloat16)
    first.register_forward_hook(_float_output_hook)
    counts = {"linear": 0, "linear+gelu": 0, "linear+add+layernorm": 0}
    if kernels is not None:
        with torch.no_grad():
            counts = _fuse_linears(inner, kernels)
    model.eval()
    log.info("fast encoder: transformer in bf16, fused oneDNN layers %s", counts)
    return counts


# ---------------------------------------------------------------------------------------------------------------
# The encoder
# ---------------------------------------------------------------------------------------------------------------


class FastEncoder(SentenceTransformerEncoder):
    """A :class:`~diagnose.embed.SentenceTransformerEncoder` whose model runs in bf16 (see the module docstring).

    Same protocol (``name``, ``label``, ``dim``, ``encode`` -> L2-normalised float32 rows); ``name`` is the exact
    encoder's name + ``"+bf16"``, ``label`` the exact label + ``", bf16"``. The weights are loaded and converted on
    first use, like the exact encoder's. ``precision`` is ``"bf16"``, or ``"fp32"`` after a failed conversion.
    ``fused`` holds the counts of fused oneDNN layers once loaded. ``fuse=False``: plain bf16 (torch's public layers
    only, see :func:`to_bf16`), what another torch release gets; tests and benches compare the two.
    """

    def __init__(self, exact: SentenceTransformerEncoder, *, fuse: bool = True) -> None:
        self.exact_name = exact.name
        self.precision = FAST_PRECISION
        self.fused: dict[str, int] = {}
        if exact.loaded:  # a Hub model, loaded eagerly by load_encoder: convert a copy, keep the original
            model = exact.model

            def load_exact() -> Any:
                return model

            def load_for_conversion() -> Any:
                import copy

                return copy.deepcopy(model)
        else:
            assert exact._loader is not None
            load_exact = load_for_conversion = exact._loader

        def loader() -> Any:
            model = load_for_conversion()  # a ModelLoadError here is the exact path's own, unchanged
            try:
                self.fused = to_bf16(model, fuse=fuse)
                return model
            except Exception as e:
                self.precision = "fp32"
                warnings.warn(
                    f"The fast (bf16) encoder path failed for {self.label!r} ({type(e).__name__}: {e}); encoding "
                    "with the exact fp32 model instead (the vectors of --precision exact, cached under the fast "
                    "name).",
                    FastPathWarning,
                    stacklevel=2,
                )
                return load_exact()

        super().__init__(
            name=f"{exact.name}+{FAST_PRECISION}",
            label=f"{exact.label}, {FAST_PRECISION}",
            source=exact.source,
            loader=loader,
            dim=exact._dim,
        )

    def __repr__(self) -> str:
        return f"FastEncoder({self.label!r}, name={self.name!r}, precision={self.precision!r})"


def fast_encoder(exact: SentenceTransformerEncoder, *, device: str = "cpu") -> SentenceTransformerEncoder:
    """The fast counterpart of ``exact`` (a :class:`FastEncoder`), or ``exact`` itself when the fast path does not
    apply here (:func:`fast_supported`), with one :class:`FastPathWarning` on a CPU (a log line on a GPU)."""
    ok, reason = fast_supported(device)
    if not ok:
        if str(device).split(":")[0] == "cpu":
            warnings.warn(
                f"The fast (bf16) encoder path is not available: {reason}. Using the exact fp32 path "
                "(--precision exact); encoding is slower but the vectors are the same as with it.",
                FastPathWarning,
                stacklevel=3,
            )
        else:
            log.info("fast encoder: %s", reason)
        return exact
    return FastEncoder(exact)
