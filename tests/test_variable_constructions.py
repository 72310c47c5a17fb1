"""Ways of making a Variable that real models use and batchify refused (probe I's WongWang2006, probe
J's rola_neurons.py, 2026-12-05): several made in one unpacking assignment, and made by a function of
the file (``_state(shape, v)``, ``full = lambda v: bm.Variable(...)`` in ``reset_state``). On main each
was BFY102 at the construction and BFY209 at every later use, and a helper that makes a Variable only
on some paths gave the BFY209s alone, nothing at the line to change."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from batchify import transform
from batchify.diagnostics import BatchifyError

SOURCE = textwrap.dedent('''
    import brainpy as bp
    import brainpy.math as bm


    def _state(shape, value, dtype=None):
        """A Variable of ``shape`` filled with ``value``."""
        return bm.Variable(bm.ones(shape, dtype=dtype) * value)


    class Leak(bp.DynamicalSystem):
        def __init__(self, n, tau=5.0):
            super().__init__()
            self.tau = tau
            self.g, self.w = bm.Variable(bm.zeros(n)), bm.TrainVar(bm.ones(n))

        def update(self, x):
            self.g.value = self.g * (1 - 1 / self.tau) + self.w * x
            return self.g.value


    class Cell(bp.DynamicalSystem):
        def __init__(self, n):
            super().__init__()
            self.n = n
            self.W = bm.TrainVar(bm.ones(n))
            self.fast, self.slow = Leak(n, 2.0), Leak(n, 8.0)
            self.reset_state()

        def reset_state(self, batch_size=None):
            full = lambda value, dtype=None: bm.Variable(bm.ones(self.n, dtype=dtype) * value)
            self.V = _state(self.n, -0.5)
            self.a, self.b = full(0.1), full(0.2)
            self.spike = _state(self.n, False, dtype=bool)

        def update(self, x):
            self.a.value, self.b.value = 0.9 * self.a + x, 0.8 * self.b + self.a
            drive = self.fast(self.a) - self.slow(self.b)
            self.V.value = 0.5 * self.V + self.W * drive
            self.spike.value = self.V > 0.0
            return self.V.value
''')


def generated(tmp_path: Path) -> str:
    (tmp_path / "cells.py").write_text(SOURCE)
    text = transform(SOURCE.encode(), "cells.py", command="batchify").text
    (tmp_path / "cells_batched.py").write_text(text)
    return text


def test_each_variable_and_child_of_an_unpacking_is_batched_in_place(tmp_path: Path) -> None:
    text = generated(tmp_path)
    assert ("        self.g, self.w = bfy.batched(bm.Variable(bm.zeros(n)), batch_size), bm.TrainVar(bm.ones(n))\n"
            in text), text
    assert ("        self.fast, self.slow = LeakBatched(n, 2.0, batch_size=batch_size), "
            "LeakBatched(n, 8.0, batch_size=batch_size)\n" in text), text
    assert "class LeakParams(NamedTuple):\n    w: jax.Array\n" in text and "class LeakState(NamedTuple):\n    g: jax.Array\n" in text


def test_a_function_that_only_makes_a_variable_stands_for_it(tmp_path: Path) -> None:
    text = generated(tmp_path)
    pure = text[text.index("def reset_state_pure"):]
    pure = pure[:pure.index("\n\n")]
    # The lambda still makes the Variable; each call's .value is the new state, as for bm.Variable(...).
    assert "full = lambda value, dtype=None: bm.Variable(bm.ones(self.n, dtype=dtype) * value)\n" in pure, pure
    assert "state = state._replace(V=_state(self.n, -0.5).value)" in pure, pure
    assert "new_a, new_b = full(0.1).value, full(0.2).value" in pure, pure
    assert "\ndef _state(shape, value, dtype=None):\n" in text  # copied: the batched class calls it
    for field in ("V: jax.Array", "a: jax.Array", "b: jax.Array", "spike: jax.Array"):
        assert field in text[text.index("class CellState"):], text


@pytest.mark.slow
@pytest.mark.parametrize("cls,init", [("Cell", "3"), ("Leak", "3")])
def test_they_verify_against_the_original(tmp_path: Path, cls: str, init: str) -> None:
    generated(tmp_path)
    result = subprocess.run([sys.executable, "-m", "batchify", "verify", "cells.py", "cells_batched.py", "--class", cls,
                             "--init", init, "--input-shape", "x=3", "--steps", "10", "--no-speed"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("helper", [
    # None on one path: not only a Variable
    "def _maybe(n, v):\n    if v is None:\n        return None\n    return bm.Variable(bm.ones(n) * v)\n",
    # bound twice at module level: which one runs is not the source's to say
    "def _maybe(n, v):\n    return bm.Variable(bm.ones(n) * v)\n\n\n_maybe = lambda n, v: None\n",
])
def test_a_helper_that_does_not_only_make_a_variable_is_refused_where_it_is_called(helper: str) -> None:
    source = ("import brainpy as bp\nimport brainpy.math as bm\n\n\n" + helper + textwrap.dedent('''


        class Odd(bp.DynamicalSystem):
            def __init__(self, n):
                super().__init__()
                self.U = _maybe(n, 1.0)

            def update(self, x):
                self.U.value = self.U + x
                return self.U.value
    '''))
    with pytest.raises(BatchifyError) as caught:
        transform(source.encode(), "odd.py", command="batchify")
    line = source.splitlines().index("        self.U = _maybe(n, 1.0)") + 1
    first = caught.value.diagnostics[0]
    assert (first.line, first.column, first.code) == (line, 18, "BFY102"), caught.value.diagnostics
    assert "_maybe() returns, a function of this file that makes a Variable" in first.message


PROJECTION_HELPER = textwrap.dedent('''
    import brainpy as bp
    import brainpy.math as bm


    class Net(bp.DynSysGroup):
        def __init__(self, n=20):
            super().__init__()
            self.E = bp.dyn.LifRef(n, V_rest=-60., V_th=-50., V_reset=-60., tau=20., tau_ref=5.,
                                   V_initializer=bp.init.Normal(-55., 2.))
            self.E2E = _projection(self.E, self.E, 0.6)

        def update(self, i_ext=0.0):
            self.E2E()
            self.E(i_ext)


    def _projection(pre, post, weight):
        return bp.dyn.FullProjAlignPostMg(
            pre=pre, delay=None, comm=bp.dnn.AllToAll(pre.num, post.num, weight),
            syn=bp.dyn.Expon.desc(post.num, tau=5.), out=bp.dyn.COBA.desc(E=0.), post=post)
''')


def test_a_function_that_only_builds_a_builtin_stands_for_it(tmp_path: Path) -> None:
    """Probe J's rola_ei_balance.py builds its projections in a helper of the file. main transformed it
    with the projection run as it is for the whole batch, and verify said, at 1:1: 'the batched model
    refused to run: NetBatched.update wrote E._before_updates.None // (<class ...Expon'>, ...).syn.g'.
    The helper's call is now the built-in it builds: held as library code, with the neurons it is given."""
    (tmp_path / "net.py").write_text(PROJECTION_HELPER)
    text = transform(PROJECTION_HELPER.encode(), "net.py", command="batchify").text
    (tmp_path / "net_batched.py").write_text(text)
    assert 'builtins=("E", "E2E")' in text, text
    assert "        self.E2E = _projection(self.E, self.E, 0.6)\n" in text
    assert "state, _ = self.library.call(params, state, self.E2E)" in text
    result = subprocess.run([sys.executable, "-m", "batchify", "verify", "net.py", "net_batched.py", "--class", "Net",
                             "--init", "", "--shared", "i_ext=20.0", "--steps", "20", "--no-speed"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("held, state", [("{'a': bm.TrainVar(bm.ones((n, n))), 'b': bm.TrainVar(bm.ones(n))}", False),
                                         ("[bm.Variable(bm.zeros(n)), bm.Variable(bm.zeros(n))]", True)])
def test_variables_in_a_plain_container_are_refused_naming_the_container(held: str, state: bool) -> None:
    """``self.ws = {'a': bm.TrainVar(...), ...}`` (probe N3): main said 'not assigned directly to an
    attribute ... v used for nothing else', which names neither the container nor a way out."""
    source = textwrap.dedent(f'''
        import brainpy as bp
        import brainpy.math as bm


        class Held(bp.DynamicalSystem):
            def __init__(self, n):
                super().__init__()
                self.ws = {held}
                self.v = bm.Variable(bm.zeros(n))

            def update(self, x):
                self.v.value = 0.9 * self.v + x
                return self.v.value
    ''')
    with pytest.raises(BatchifyError) as caught:
        transform(source.encode(), "held.py", command="batchify")
    found = [d for d in caught.value.diagnostics if d.code == "BFY102"]
    kind = "list" if state else "dict"
    assert len(found) == 2 and all(f"self.ws holds this Variable in a plain {kind}" in d.message for d in found)
    assert all(("bm.VarDict / bm.VarList" in d.message) == state for d in found)
