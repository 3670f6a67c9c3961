"""dse --ray: the candidates as Ray tasks give the local pool's ranking; Ray's own supervision."""

import sys

import pytest

from pycde_accel import cli, dse, rayjobs
from pycde_accel.errors import UserError


def _boom(x):
    if x == 2:
        raise ValueError("two is refused\nsecond line")
    return x * 10


def _sleep(x):
    import time
    time.sleep(x)
    return x


_SEEN = []


def _init(tag):
    _SEEN.append(tag)


def _seen(_):
    return list(_SEEN)


@pytest.mark.slow
def test_ray_ranking_equals_the_local_pool(tmp_path):
    """One local Ray instance for the whole DSE (sweep), ranking and predictions equal the
    process pool's for the same seed; Ray's own outcomes: errors, time limits, init once."""
    cfgs = dse.space(rows=(2, 4), cols=(4, 8), axi=(32,), spad=(256,), spad_c=(64,),
                     target="ecp5-85f")
    local = dse.run_dse("mlp", "ecp5-85f", None, configs=cfgs, confirm_n=0, jobs=2, seed=3)
    with rayjobs.session(None, 2):
        on_ray = dse.run_dse("mlp", "ecp5-85f", None, configs=cfgs, confirm_n=0, jobs=2,
                             seed=3, ray="")
        assert [(c.key, c.status, c.predicted_cycles, c.predicted_layers)
                for c in on_ray.candidates] == \
            [(c.key, c.status, c.predicted_cycles, c.predicted_layers) for c in local.candidates]
        assert len(local.ranked) >= 2 and on_ray.pareto[0].key == local.pareto[0].key
        outs = rayjobs.run_jobs_ray(_boom, [(1,), (2,), (3,)], jobs=2,
                                    names=["a", "b", "c"])
        assert [o.value for o in outs] == [10, None, 30]
        assert outs[1].error == "b: ValueError: two is refused"
        outs = rayjobs.run_jobs_ray(_sleep, [(0,), (60,)], jobs=2, limits=[30, 2],
                                    names=["quick", "slow"])
        assert outs[0].ok and outs[1].error == "slow did not finish within 2 s"
        outs = rayjobs.run_jobs_ray(_seen, [(0,)] * 4, jobs=1, init=(_init, ("x",)))
        assert all(o.value.count("x") == 1 for o in outs)     # once per worker, not per task


def test_ray_missing_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)        # import ray -> ImportError
    with pytest.raises(UserError, match=r"--ray needs Ray, an optional extra: pip install -e '\.\[ray\]'"):
        rayjobs.run_jobs_ray(_boom, [(1,)])
    assert cli.main(["dse", "mlp", "--target", "ecp5-25f", "--rows", "2", "--cols", "4",
                     "--axi", "32", "--spad", "256", "--spad-c", "64", "--confirm", "0",
                     "--out", str(tmp_path / "d"), "--ray"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --ray needs Ray") and len(err.splitlines()) == 1
    assert not (tmp_path / "d").exists()
