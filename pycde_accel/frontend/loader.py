"""Model loading: ``path/to/file.py[:function]`` or a built-in name -> module + example inputs.

The file is imported with importlib under a private module name; the function (default
``build``) is called without arguments and must return ``(torch.nn.Module, tuple_of_tensors)``
(a list of tensors is accepted too). It runs with torch's global RNG seeded to 0 (and the
caller's RNG state restored after), so an unseeded model is the same model every time. Every way
this can fail is a one-line :class:`~pycde_accel.errors.UserError`.

In-memory models (the Python API, ``pycde_accel.compile``) go through :func:`from_module`: a
``torch.nn.Module`` and its example inputs, checked the same way; ``load_model`` passes a
:class:`LoadedModel` through unchanged, so every step that takes a model spec takes one too.

Sample inputs (:func:`sample_inputs`) for calibration and evaluation are drawn, seeded, from the
examples' distribution: standard normal for the built-ins (whose examples are standard normal);
for a model file, a normal distribution with each example tensor's own mean and standard
deviation.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError
from . import models


@dataclass
class LoadedModel:
    name: str                       # built-in name or file name (no directories)
    spec: str                       # "mlp" or "model.py:build" (file name only: no absolute paths)
    module: "object"                # torch.nn.Module, in eval mode
    example_inputs: tuple           # tuple of torch.Tensor
    file: Path | None = None        # the model file (None for built-ins)
    fallback_source: str = ""       # "model.py:LINE" for errors whose op has no frame in the file
    builtin: bool = False           # a built-in: samples are standard normal (see sample_inputs)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def split_spec(spec: str) -> tuple[str, str]:
    """``file.py[:function]`` -> (path, function)."""
    path, sep, func = spec.rpartition(":")
    if sep and path and func.isidentifier():
        return path, func
    return spec, "build"


def load_model(spec: "str | LoadedModel | None") -> LoadedModel:
    import torch
    if isinstance(spec, LoadedModel):
        return spec
    if spec is None:
        spec = models.DEFAULT
    if not isinstance(spec, str):
        raise UserError(f"model: expected a built-in name or path/to/file.py[:function], got "
                        f"{_describe(spec)} (use pycde_accel.compile for a torch.nn.Module)")
    if spec in models.BUILTINS:
        module, inputs = models.BUILTINS[spec]()
        return LoadedModel(spec, spec, module, tuple(inputs), builtin=True)
    path_s, func = split_spec(spec)
    path = Path(path_s)
    if path.suffix != ".py":
        raise UserError(f"model {spec!r}: not a built-in ({', '.join(sorted(models.BUILTINS))}) "
                        f"and not a path/to/file.py[:function]")
    if not path.is_file():
        raise UserError(f"model file {path_s} does not exist")
    mod_name = "_pycde_accel_model_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    try:
        ispec = importlib.util.spec_from_file_location(mod_name, path)
        mod = importlib.util.module_from_spec(ispec)
        sys.modules[mod_name] = mod
        ispec.loader.exec_module(mod)
    except (KeyboardInterrupt, MemoryError):
        raise
    except BaseException as e:  # SyntaxError, SystemExit, anything the model file raises
        sys.modules.pop(mod_name, None)
        raise UserError(f"model file {path.name} raised on import: {_first_line(e)}") from e
    where = f"{path.name}:{func}"
    fn = getattr(mod, func, None)
    if fn is None:
        raise UserError(f"model file {path.name} has no function {func!r}")
    if not callable(fn):
        raise UserError(f"{where} is not a function")
    try:
        # A build function that initializes weights from torch's global RNG without seeding it
        # still gives the same model (and so byte-identical outputs) every time.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            result = fn()
    except (KeyboardInterrupt, MemoryError):
        raise
    except BaseException as e:
        raise UserError(f"{where}() raised {_first_line(e)}") from e
    want = "must return (torch.nn.Module, tuple_of_example_tensors)"
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise UserError(f"{where}() {want}, got {_describe(result)}")
    module, inputs = result
    _check(module, inputs, f"{where}() {want}, got", f"{where}():")
    return LoadedModel(path.name, where, module.eval(), tuple(inputs), path,
                       _fallback_source(path, module, fn))


def _check(module, inputs, want: str, where: str) -> None:
    import torch
    if not isinstance(module, torch.nn.Module):
        raise UserError(f"{want} {_describe(module)} as the module")
    if isinstance(inputs, torch.Tensor) or not isinstance(inputs, (tuple, list)) or not inputs:
        raise UserError(f"{want} {_describe(inputs)} as the example inputs")
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise UserError(f"{want} {_describe(t)} as example input {i}")
        if not t.is_floating_point():
            raise UserError(f"{where} example input {i} has dtype {t.dtype}; float inputs expected")


def from_module(module, example_inputs, name: str | None = None) -> LoadedModel:
    """An in-memory ``torch.nn.Module`` and its example inputs (a tuple of float tensors; one
    tensor is taken as a tuple of one) as a model; ``name`` defaults to the module's class name.
    Put in eval mode. Calibration samples follow each example's mean and standard deviation, as
    for a model file."""
    import inspect

    import torch
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    _check(module, example_inputs,
           "compile(model, example_inputs) needs a torch.nn.Module and a tuple of float tensors, got",
           "compile():")
    name = name or type(module).__name__
    fallback = name
    try:
        src = inspect.getsourcefile(type(module))
        if src:
            fallback = f"{Path(src).name}:{inspect.getsourcelines(type(module))[1]}"
    except (TypeError, OSError):
        pass
    return LoadedModel(name, name, module.eval(), tuple(example_inputs), None, fallback)


def _fallback_source(path: Path, module, fn) -> str:
    """The model's class definition if it is in the model file, else the build function's."""
    import inspect
    for obj in (type(module), fn):
        try:
            src = inspect.getsourcefile(obj)
            if src and Path(src).resolve() == path.resolve():
                return f"{path.name}:{inspect.getsourcelines(obj)[1]}"
        except (TypeError, OSError):
            continue
    return path.name


def _describe(v) -> str:
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)}"
    return f"a {type(v).__module__}.{type(v).__qualname__}" if type(v).__module__ != "builtins" \
        else f"a {type(v).__name__}"


def sample_inputs(model: LoadedModel, rng: np.random.Generator) -> list[np.ndarray]:
    """One seeded batch shaped like the examples (float64), see the module docstring."""
    out = []
    for t in model.example_inputs:
        x = t.detach().double().numpy()
        if model.builtin:
            out.append(rng.standard_normal(x.shape))
            continue
        std = float(x.std()) if x.size > 1 else 1.0
        out.append(rng.standard_normal(x.shape) * (std if std > 0 else 1.0) + float(x.mean()))
    return out
