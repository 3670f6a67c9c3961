"""Model loading: ``path/to/file.py[:function]`` or a built-in name -> module + example inputs.

The file is imported with importlib under a private module name; the function (default
``build``) is called without arguments and must return ``(torch.nn.Module, tuple_of_tensors)``
(a list of tensors is accepted too). It runs with torch's global RNG seeded to 0 (and the
caller's RNG state restored after), so an unseeded model is the same model every time. Every way
this can fail is a one-line :class:`~pycde_accel.errors.UserError`.

A model may also be an importable callable, ``package.module:callable`` (for example
``torchvision.models:resnet18``), with an input shape (``--input-shape 1x3x32x32``) and dtype
(``--input-dtype``, default float32): the module is imported (:func:`import_module`, with the
torchvision compatibility step of docs/toolchain.md), the callable is called with no arguments
(under the same seeded RNG) and must return a ``torch.nn.Module``; the example input is a seeded
standard normal tensor of that shape. Its spec is written as on the command line,
``torchvision.models:resnet18 --input-shape 1x3x32x32`` (:func:`callable_spec`), so that a spec
read back from design.json loads the same model. Only ``package.module:callable`` is accepted,
never code.

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
import importlib
import importlib.util
import re
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


#: ``package.module:callable`` (dotted identifiers, one colon, no file suffix)
_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")
_SHAPE_OPT, _DTYPE_OPT = " --input-shape ", " --input-dtype "
DEFAULT_DTYPE = "float32"
MODEL_FORMS = ("a built-in name, path/to/file.py[:function] or package.module:callable "
               "(with --input-shape)")


def is_callable_spec(spec) -> bool:
    """Whether ``spec`` names an importable callable (``package.module:callable``, optionally
    followed by its ``--input-shape``/``--input-dtype`` as :func:`callable_spec` writes them)."""
    if not isinstance(spec, str):
        return False
    target = spec.split(" ", 1)[0]
    return bool(_TARGET.fullmatch(target)) and not target.split(":")[0].endswith(".py")


def parse_shape(text: str) -> tuple[int, ...]:
    """``1x3x32x32`` -> (1, 3, 32, 32); every dimension a positive integer."""
    parts = str(text).strip().lower().split("x")
    if not all(p.isdigit() and int(p) > 0 for p in parts):
        raise UserError(f"--input-shape {text!r}: expected positive dimensions joined by x, "
                        f"e.g. 1x3x32x32")
    return tuple(int(p) for p in parts)


def _dtype(name: str):
    import torch
    dt = getattr(torch, str(name), None)
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point or dt.is_complex:
        raise UserError(f"--input-dtype {name!r}: expected a floating-point torch dtype "
                        f"(float32, float64, float16, bfloat16)")
    return dt


def callable_spec(model, input_shape: str | None, input_dtype: str | None = None):
    """The spec for a command line's MODEL with its ``--input-shape``/``--input-dtype``:
    ``package.module:callable --input-shape 1x3x32x32`` (the dtype only when not float32), or
    ``model`` unchanged when neither option is given. The options belong to a callable MODEL
    only (a model file or built-in has its own example inputs)."""
    if input_shape is None and input_dtype is None:
        return model
    if not is_callable_spec(model) or " " in model:
        raise UserError(f"--input-shape/--input-dtype apply to a package.module:callable MODEL "
                        f"only, not to {model or 'the default model'!r} (a model file's function "
                        f"and a built-in give their own example inputs)")
    if input_shape is None:
        raise UserError(f"model {model}: --input-dtype needs --input-shape too")
    shape = parse_shape(input_shape)
    spec = f"{model}{_SHAPE_OPT}{'x'.join(map(str, shape))}"
    if input_dtype is not None:
        _dtype(input_dtype)
        if input_dtype != DEFAULT_DTYPE:
            spec += f"{_DTYPE_OPT}{input_dtype}"
    return spec


# torchvision 0.28.0 (the only one for torch 2.13.0) is a CUDA build: its C extension does not
# load against the CPU torch, and `import torchvision` then fails registering a fake kernel for
# torchvision::nms, an op whose schema the extension would have defined. The model definitions
# are pure Python; with the schemas defined first, the import succeeds (docs/toolchain.md,
# "PyTorch models from torchvision").
_TORCHVISION_ERROR = "operator torchvision::nms does not exist"
_TORCHVISION_LIB = None


def _define_torchvision_schemas() -> None:
    global _TORCHVISION_LIB
    import torch
    if _TORCHVISION_LIB is None:
        lib = torch.library.Library("torchvision", "DEF")
        for op in ("nms", "qnms"):
            lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _TORCHVISION_LIB = lib          # kept: the schemas live as long as the library object


def import_module(name: str):
    """``importlib.import_module(name)``; when it fails only because torchvision's C extension
    did not define its op schemas (see above), they are defined and the import retried."""
    try:
        return importlib.import_module(name)
    except RuntimeError as e:
        if _TORCHVISION_ERROR not in str(e):
            raise
    for k in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
        del sys.modules[k]              # the half-imported package, so that it imports again
    _define_torchvision_schemas()
    return importlib.import_module(name)


def _load_callable(spec: str) -> "LoadedModel":
    import torch
    target, shape, dtype_name = spec, None, DEFAULT_DTYPE
    if _DTYPE_OPT in target:
        target, dtype_name = target.split(_DTYPE_OPT, 1)
    if _SHAPE_OPT in target:
        target, shape = target.split(_SHAPE_OPT, 1)
    target = target.strip()
    if not is_callable_spec(target) or " " in target:
        raise UserError(f"model {spec!r}: expected {MODEL_FORMS}")
    if shape is None:
        raise UserError(f"model {target}: a package.module:callable model needs --input-shape "
                        f"(e.g. --input-shape 1x3x32x32)")
    shape, dtype = parse_shape(shape), _dtype(dtype_name.strip())
    mod_name, func = target.split(":")
    try:
        mod = import_module(mod_name)
    except (KeyboardInterrupt, MemoryError):
        raise
    except ModuleNotFoundError as e:
        raise UserError(f"model {target}: module {mod_name} is not importable: "
                        f"{_first_line(e)}") from e
    except BaseException as e:
        raise UserError(f"model {target}: importing {mod_name} raised {_first_line(e)}") from e
    if not hasattr(mod, func):
        raise UserError(f"model {target}: module {mod_name} has no attribute {func!r}")
    fn = getattr(mod, func)
    if not callable(fn):
        raise UserError(f"model {target}: {func} is {_describe(fn)}, not a callable")
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            module = fn()
            example = torch.randn(shape, dtype=torch.float64).to(dtype)
    except (KeyboardInterrupt, MemoryError):
        raise
    except BaseException as e:
        raise UserError(f"model {target}: {target}() raised {_first_line(e)}") from e
    if not isinstance(module, torch.nn.Module):
        raise UserError(f"model {target}: {target}() returned {_describe(module)}, "
                        f"not a torch.nn.Module")
    return LoadedModel(func, spec, module.eval(), (example,), None,
                       _package_source(module, fn) or target)


def _package_source(module, fn) -> str:
    """``torchvision/models/resnet.py:LINE``: the definition of the module's class, or of the
    callable when that class is torch's own (an ``nn.Sequential``); the path inside its package
    (capture.source_path); "" when neither has a source."""
    import inspect
    import os

    from .capture import _torch_dir, source_path
    for obj in (type(module), inspect.unwrap(fn)):
        try:
            src = inspect.getsourcefile(obj)
            if src and not os.path.abspath(src).startswith(_torch_dir()):
                return f"{source_path(src)}:{inspect.getsourcelines(obj)[1]}"
        except (TypeError, OSError):
            continue
    return ""


def load_model(spec: "str | LoadedModel | None") -> LoadedModel:
    import torch
    if isinstance(spec, LoadedModel):
        return spec
    if spec is None:
        spec = models.DEFAULT
    if not isinstance(spec, str):
        raise UserError(f"model: expected {MODEL_FORMS}, got "
                        f"{_describe(spec)} (use pycde_accel.compile for a torch.nn.Module)")
    if spec in models.BUILTINS:
        module, inputs = models.BUILTINS[spec]()
        return LoadedModel(spec, spec, module, tuple(inputs), builtin=True)
    if is_callable_spec(spec):
        return _load_callable(spec)
    path_s, func = split_spec(spec)
    path = Path(path_s)
    if path.suffix != ".py":
        raise UserError(f"model {spec!r}: not a built-in ({', '.join(sorted(models.BUILTINS))}), "
                        f"not a path/to/file.py[:function] and not a package.module:callable")
    if path.is_dir():
        raise UserError(f"model file {path_s} is a folder, not a Python file")
    if not path.is_file():
        raise UserError(f"model file {path_s} does not exist")
    mod_name = "_pycde_accel_model_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    try:
        ispec = importlib.util.spec_from_file_location(mod_name, path)
        mod = importlib.util.module_from_spec(ispec)
        sys.modules[mod_name] = mod
        ispec.loader.exec_module(mod)
    except KeyboardInterrupt:
        raise
    except MemoryError:
        sys.modules.pop(mod_name, None)
        raise UserError(f"model file {path.name} ran out of memory on import (MemoryError)") from None
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
    except KeyboardInterrupt:
        raise
    except MemoryError:
        raise UserError(f"{where}() ran out of memory (MemoryError)") from None
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
