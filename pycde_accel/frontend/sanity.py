"""Checks of a loaded model before the expensive steps (``check(model)``, run by
``frontend.run`` right after loading): each problem is one :class:`UserError` line naming it.

* example inputs: not 0-d, not empty, not batch 0, finite;
* size: the memory compiling the model takes follows from its number of weights
  (:data:`BYTES_PER_WEIGHT`, measured on a 3000x3000 Linear: the float64 and int64 copies of the
  quantizer, the reference, the packed image and the torch-mlir import) and is refused, with the
  size it needs, when it is more than the machine has available;
* weights (parameters and buffers): float32 and finite;
* one forward pass on the examples: it returns a tensor or a tuple/list of tensors, and its
  float output is finite (an output that is already NaN or inf has nothing to quantize). A
  forward that raises is left to ``torch.export``, which reports it.
"""

from __future__ import annotations

from ..errors import UserError

#: bytes of memory the flow takes per weight (peak RSS over the weight count, measured) ...
BYTES_PER_WEIGHT = 64
#: ... on top of what the tool itself takes (torch, torch-mlir, pycde loaded)
BASE_BYTES = 600 << 20


def available_bytes() -> int | None:
    """Memory this process can still take: MemAvailable of /proc/meminfo, lowered to the
    cgroup's limit when there is one; None where neither can be read."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            lim = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if lim != "max":
            left = int(lim) - used
            avail = left if avail is None else min(avail, left)
    except (OSError, ValueError):
        pass
    return avail


def _gb(n: int) -> str:
    return f"{n / (1 << 30):.1f} GB"


def _nonfinite(t) -> str | None:
    """'NaN (3 of 40 values)' / 'inf (...)' for a tensor with such values, else None."""
    import torch
    if not t.is_floating_point() or t.device.type == "meta" or t.numel() == 0:
        return None
    t = t.detach()
    nan = int(torch.isnan(t).sum())
    inf = int(torch.isinf(t).sum())
    if not nan and not inf:
        return None
    what = " and ".join(w for w, k in (("NaN", nan), ("inf", inf)) if k)
    return f"{what} ({nan + inf} of {t.numel()} values)"


def check_inputs(inputs) -> None:
    for i, t in enumerate(inputs):
        shape = list(t.shape)
        if t.dim() == 0:
            raise UserError(f"example input {i} is 0-d (a scalar): an input needs a batch "
                            f"dimension, e.g. shape [1, N]")
        if shape[0] == 0:
            raise UserError(f"example input {i} has batch size 0 (shape {shape}): give at least "
                            f"one example")
        if t.numel() == 0:
            raise UserError(f"example input {i} of shape {shape} has no elements")
        bad = _nonfinite(t)
        if bad:
            raise UserError(f"example input {i} holds {bad}: inputs must be finite")


def check_size(module, available: int | None = None) -> None:
    n = sum(int(p.numel()) for p in module.parameters()) + \
        sum(int(b.numel()) for b in module.buffers())
    need = BASE_BYTES + BYTES_PER_WEIGHT * n
    have = available_bytes() if available is None else available
    if have is not None and need > have:
        raise UserError(f"the model has {n:,} weights: compiling it needs about {_gb(need)} of "
                        f"memory, and {_gb(have)} are available")


def check_weights(module) -> None:
    import torch
    named = list(module.named_parameters()) + list(module.named_buffers())
    for name, t in named:
        if t.is_floating_point() and t.dtype != torch.float32:
            raise UserError(f"weight {name} is {str(t.dtype).replace('torch.', '')}: only float32 "
                            f"models are supported (convert it with model.float())")
    for name, t in named:
        bad = _nonfinite(t)
        if bad:
            raise UserError(f"weight {name} holds {bad}: weights must be finite")


def _describe(v) -> str:
    return f"a {type(v).__name__}"


def check_forward(module, inputs) -> None:
    import torch
    try:
        with torch.no_grad():
            out = module(*inputs)
    except Exception:  # noqa: BLE001 - torch.export reports a forward that raises
        return
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            where = f" as output {i}" if isinstance(out, (tuple, list)) else ""
            raise UserError(f"the model's forward returns {_describe(o)}{where}: it must return "
                            f"a tensor or a tuple of tensors")
    for i, o in enumerate(outs):
        bad = _nonfinite(o)
        if bad:
            raise UserError(f"the model's float output {i} on its example input holds {bad}: "
                            f"there is nothing to quantize (check the weights and the input "
                            f"range for a float32 overflow)")


def check(model) -> None:
    """Every check above on a :class:`~pycde_accel.frontend.loader.LoadedModel`."""
    check_inputs(model.example_inputs)
    check_size(model.module)
    check_weights(model.module)
    check_forward(model.module, model.example_inputs)
