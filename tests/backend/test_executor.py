"""The descriptor golden model (executor) and the command model agree with the reference on
random chains of transposes and reshapes: views where strides allow, a Linear's folded weight
order where a flatten is not a view, outputs read through their placements (no COPY layers)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from pycde_accel.backend import compile_program, executor
from pycde_accel.errors import UserError
from pycde_accel.frontend import graph as g

from .conftest import cfg
from .test_cmdexec import CONFIGS, SETTINGS, _inputs, _quantize, check


@st.composite
def _view_chain(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=2, max_size=4)))
    ops, cur = [], shape
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            perm = tuple(draw(st.permutations(range(len(cur)))))
            ops.append(("t", perm))
            cur = tuple(cur[p] for p in perm)
        else:
            total = int(np.prod(cur))
            divs = [d for d in range(1, total + 1) if total % d == 0]
            first = draw(st.sampled_from(divs))
            new = (first, total // first) if draw(st.booleans()) else (total,)
            ops.append(("r", new))
            cur = new
    return shape, ops, draw(st.integers(0, 5))


@SETTINGS
@given(config=CONFIGS, chain=_view_chain(), seed=st.integers(0, 2**16))
def test_random_view_chains(config, chain, seed):
    shape, ops, fc = chain
    rng = np.random.default_rng(seed)
    nodes = [g.Input("x", (), shape, index=0)]
    cur, last = shape, "x"
    for i, (kind, arg) in enumerate(ops):
        if kind == "t":
            cur = tuple(cur[p] for p in arg)
            nodes.append(g.Transpose(f"v{i}", (last,), cur, perm=arg))
        else:
            cur = arg
            nodes.append(g.Reshape(f"v{i}", (last,), cur))
        last = f"v{i}"
    if fc:
        nodes.append(g.Linear("fc", (last,), cur[:-1] + (fc,), module="fc",
                              weight=rng.normal(size=(fc, cur[-1])), bias=rng.normal(size=fc)))
        last = "fc"
    qm = _quantize(g.Graph(nodes, ["x"], [last]), rng)
    try:
        check(qm, config, _inputs(qm, rng))
    except UserError as e:
        # a Linear over rows that are not equal runs at a constant stride needs a COPY; a row
        # spanning padded pixels can exceed the scratchpad
        assert fc and "layer fc" in str(e) and ("COPY" in str(e) or "exceeds config" in str(e))


def test_executor_refuses_another_array():
    rng = np.random.default_rng(0)
    nodes = [g.Input("x", (), (2, 5), index=0), g.Linear("fc", ("x",), (2, 3), weight=rng.normal(size=(3, 5)))]
    qm = _quantize(g.Graph(nodes, ["x"], ["fc"]), rng)
    cp = compile_program(qm, cfg(4, 8))
    with pytest.raises(executor.ExecutionError, match="tiled for 4x8"):
        executor.execute(cp.image, cfg(8, 8))
