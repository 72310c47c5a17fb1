"""Ways of writing a source that a probe of the transform found mishandled (2026-12-04): each exited 0 on
main and wrote a module that failed to import, or an internal error. Transform only, plus an import."""

from __future__ import annotations

import textwrap
from pathlib import Path

import brainpy as bp
import brainpy.math as bm
import libcst as cst
import pytest

from batchify import transform
from batchify.diagnostics import BatchifyError
from batchify.cstwalk import walk
from batchify.loader import load_generated

HEAD = "import brainpy as bp\nimport brainpy.math as bm\n"

RATE = textwrap.dedent('''
    class Rate(bp.DynamicalSystem):
        def __init__(self, n: int, opts: Later | None = None) -> None:
            super().__init__()
            self.h = bm.Variable(bm.zeros(n))

        def clone(self) -> Rate:
            return self

        def update(self, x: Arr) -> Arr:
            self.h.value = self.h + x if self.h.shape[0] > 1 else self.h - x
            return self.h.value


    class Later:
        pass
''')


def imported(tmp_path: Path, source: str, name: str):
    (tmp_path / f"{name}.py").write_text(source)
    (tmp_path / f"{name}_batched.py").write_text(transform(source.encode(), f"{name}.py", command="batchify").text)
    return load_generated(tmp_path / f"{name}_batched.py", f"{name}_generated")


def test_from_future_import_annotations_is_kept(tmp_path: Path) -> None:
    """main dropped it: `-> Rate`, renamed `-> RateBatched` inside RateBatched, was evaluated at class
    creation: NameError: name 'RateBatched' is not defined."""
    source = "from __future__ import annotations\n" + HEAD + "Arr = bm.Array\n" + RATE
    module = imported(tmp_path, source, "future")
    text = (tmp_path / "future_batched.py").read_text()
    assert "\nfrom __future__ import annotations\n\nfrom typing import NamedTuple\n" in text
    batched = module.RateBatched(3, batch_size=2)
    assert batched.update(bm.ones((2, 3))).shape == (2, 3)


def test_a_type_statement_the_model_reads_is_copied(tmp_path: Path) -> None:
    """main: BFY900 internal error: the generated module reads 'Arr', which it never binds."""
    source = HEAD + "\ntype Arr = bm.Array\ntype Pair[T] = tuple[T, T]\n" + RATE.replace(
        "    def clone(self) -> Rate:", "    def clone(self, p: Pair[int]) -> 'Rate':").replace(
        "opts: Later | None = None", "opts: 'Later | None' = None")
    module = imported(tmp_path, source, "aliases")
    text = (tmp_path / "aliases_batched.py").read_text()
    assert "\ntype Arr = bm.Array\n" in text and "\ntype Pair[T] = tuple[T, T]\n" in text
    assert module.RateBatched(3, batch_size=2).update(bm.ones((2, 3))).shape == (2, 3)


def test_a_conditional_expression_on_configuration_is_not_refused(tmp_path: Path) -> None:
    """The BFY210 check of `... if ... else ...` (a test on state) leaves a test on a shape alone."""
    source = "from __future__ import annotations\n" + HEAD + "Arr = bm.Array\n" + RATE
    imported(tmp_path, source, "shape_test")
    assert "state.h + x if state.h.shape[0] > 1 else state.h - x" in (tmp_path / "shape_test_batched.py").read_text()


def test_an_optional_import_and_a_module_level_loop_the_model_reads_are_copied(tmp_path: Path) -> None:
    """main: BFY012 'np' (and 'ACC') is defined only inside a module-level try (for) block, though each is
    made of imports and assignments only. A `__main__` block stays out (test_cli's name-only-in-main)."""
    source = (HEAD + "try:\n    import numpy as np\nexcept ImportError:\n    np = None\n"
              "ACC = 0\nfor _i in range(3):\n    ACC += _i\n" + RATE.replace(
                  "        self.h.value = self.h + x if self.h.shape[0] > 1 else self.h - x",
                  "        self.h.value = self.h + x * np.float32(ACC)").replace("Later | None", "object"))
    module = imported(tmp_path, source.replace(": Arr", "").replace(" -> Arr", "").replace(" -> Rate", ""),
                      "optional")
    text = (tmp_path / "optional_batched.py").read_text()
    assert "\ntry:\n    import numpy as np\nexcept ImportError:\n    np = None\n\nACC = 0\n\nfor _i in range(3):\n" in text
    np_out = module.RateBatched(3, batch_size=2).update(bm.ones((2, 3)))
    assert float(np_out[0, 0]) == 3.0


def test_a_classmethod_factory_builds_the_batched_class(tmp_path: Path) -> None:
    """main copied `return cls(cfg['n'])` as written: GrabBatched.from_config({'n': 4}) raised TypeError
    (missing keyword-only argument 'batch_size'), and the copy had no way to take it."""
    source = HEAD + textwrap.dedent('''
        class Grab(bp.DynamicalSystem):
            def __init__(self, n, tau=None):
                super().__init__()
                self.tau = tau or 2.0
                self.h = bm.Variable(bm.zeros(n))

            @classmethod
            def from_config(cls, cfg):
                return cls(cfg['n'], cfg.get('tau'))

            def update(self, x):
                self.h.value = self.h / self.tau + bm.random.normal(size=x.shape) * 0.0 + x
                return self.h.value
    ''')
    module = imported(tmp_path, source, "factory")
    text = (tmp_path / "factory_batched.py").read_text()
    assert "    def from_config(cls, cfg, *, batch_size, seed=None):\n" in text
    assert "        return cls(cfg['n'], cfg.get('tau'), batch_size=batch_size, seed=seed)\n" in text
    built = module.GrabBatched.from_config({"n": 4, "tau": 4.0}, batch_size=3, seed=1)
    assert built.batch_size == 3 and built.h.value.shape == (3, 4) and built.tau == 4.0


BUILTIN_SHAPE_CHECK = HEAD + textwrap.dedent('''
    class Net(bp.DynamicalSystem):
        def __init__(self, n):
            super().__init__()
            self.N = bp.dyn.LifRef(n, V_rest=0., V_th=1., V_reset=0., tau=5., tau_ref=1.)
            self.out = bm.Variable(bm.zeros(n))

        def update(self, x):
            if x.shape != self.N.V.shape:
                raise ValueError(f"input of shape {x.shape}, the neurons have {self.N.V.shape}")
            self.out.value = self.N(x) + 0.1 * self.out
            return self.out.value
''')


def test_a_builtins_shape_in_an_if_is_configuration(tmp_path: Path) -> None:
    """main refused it: BFY210 Python `if` on self.N.V, a Variable (its .shape is the same for every
    example, as an own Variable's is, which was allowed)."""
    module = imported(tmp_path, BUILTIN_SHAPE_CHECK, "shapes")
    net = module.NetBatched(3, batch_size=2)
    bp.share.save(t=0.0, dt=bm.get_dt(), i=0)  # (LifRef reads the clock, as under DSRunner)
    assert net.update(bm.ones((2, 3))).shape == (2, 3)  # one example's shape, (3,), against the neurons'
    with pytest.raises(ValueError, match=r"input of shape \(4,\), the neurons have \(3,\)"):
        net.update(bm.ones((2, 4)))


def test_a_library_read_inside_an_f_string_compiles_on_python_3_11(tmp_path: Path) -> None:
    """main wrote f"...{self.library.read(params, state, "N.V").shape}": the same quote inside a
    replacement field is Python 3.12's grammar (PEP 701), a SyntaxError on 3.11, which we support."""
    text = transform(BUILTIN_SHAPE_CHECK.encode(), "shapes.py", command="batchify").text
    fstrings = [n for n in walk(cst.parse_module(text)) if type(n) is cst.FormattedString]
    clashes = [(f.start, s.value) for f in fstrings for s in walk(f)
               if type(s) is cst.SimpleString and s.quote[-1] == f.start[-1]]
    assert fstrings and not clashes, clashes
    assert "{self.library.read(params, state, 'N.V.shape')}" in text


BUILTIN_TEST = HEAD + textwrap.dedent('''
    class Net(bp.DynamicalSystem):
        def __init__(self, n):
            super().__init__()
            self.N = bp.dyn.Lif(n, V_rest=0., V_th=1., V_reset=0., tau=5.)
            self.out = bm.Variable(bm.zeros(n))

        def update(self, x):
            v = VALUE
            if v > 0:
                x = x * 2
            self.out.value = self.N(x) + 0.1 * self.out
            return self.out.value
''')


@pytest.mark.parametrize("value, refused", [
    ("self.N.V.sum()", True),  # main: exit 0, then a ConcretizationTypeError under vmap
    ("self.N.spike.any()", True),
    ("self.N.tau", True),  # (the transform cannot tell a parameter from a Variable)
    ("self.N.num", False),
    ("self.N.varshape[0]", False),
    ("self.N.V.shape[0]", False),  # main: BFY210 when tested directly in the if
])
def test_an_if_on_a_local_read_from_a_builtin(tmp_path: Path, value: str, refused: bool) -> None:
    """A local read from a built-in's Variable is traced, as one read from the model's own is; main
    took it for configuration, and the batched model failed under vmap instead of being refused."""
    source = BUILTIN_TEST.replace("VALUE", value)
    if refused:
        with pytest.raises(BatchifyError, match=r"models.py:12:12: BFY210 Python `if` on v, computed from"):
            transform(source.encode(), "models.py", command="batchify")
        direct = source.replace("if v > 0:", f"if {value} > 0:")
        with pytest.raises(BatchifyError, match=r"BFY210 Python `if` on self\.N\.(V|spike|tau), an attribute of a "
                           r"built-in that batchify takes for a Variable"):
            transform(direct.encode(), "models.py", command="batchify")
    else:
        imported(tmp_path, source, "models")
        imported(tmp_path, source.replace("if v > 0:", f"if {value} > 0:"), "direct")


SELF_DOCUMENTING = BUILTIN_SHAPE_CHECK.replace(
    'raise ValueError(f"input of shape {x.shape}, the neurons have {self.N.V.shape}")',
    'raise ValueError(f"{x.shape=} {self.N.V.shape=}, { self.out.shape = }, {self.out.shape=!s}"\n'
    '                             f" {self.out.shape[0]=:>4} {{{self.N.V.shape[0]=}}}")')
assert SELF_DOCUMENTING != BUILTIN_SHAPE_CHECK


def test_a_self_documenting_f_string_field_keeps_the_text_the_user_wrote(tmp_path: Path) -> None:
    """main wrote f"{self.library.read(params, state, 'N.V.shape')=}": `=` prints the expression's
    own text, so the batched model's message named batchify's rewrite, not the user's field."""
    module = imported(tmp_path, SELF_DOCUMENTING, "selfdoc")
    net = module.NetBatched(3, batch_size=2)
    bp.share.save(t=0.0, dt=bm.get_dt(), i=0)
    with pytest.raises(ValueError) as batched_error:
        net.update(bm.ones((2, 4)))
    namespace: dict = {}
    exec(compile(SELF_DOCUMENTING, "selfdoc_original.py", "exec"), namespace)
    with pytest.raises(ValueError) as original_error:
        namespace["Net"](3).update(bm.ones(4))
    assert str(batched_error.value) == str(original_error.value)
    assert "self.N.V.shape=(3,)" in str(original_error.value)
    assert "{x.shape=}" in (tmp_path / "selfdoc_batched.py").read_text()  # a field left as it was stays as written


@pytest.mark.parametrize("field", [
    "{ self.out.shape\n        = }",  # across lines: the block's indentation
    r"{self.out.shape[0] + len('\N{DIGIT ONE}')=}",  # (helper-40: main wrote `{{DIGIT ONE}}`, BFY900)
    r"""{self.out.shape[0] + len('\"')=}""",  # (helper-40: main escaped the escape, BFY900)
    "{self.out.shape[0] != 3=}",  # (Python 3.12.1 prints 'self.out.shape[0]True', helper-40)
])
def test_a_self_documenting_field_python_prints_otherwise_is_refused(field: str) -> None:
    """The literal written in front of the rewritten field cannot hold these texts as Python prints them:
    BFY222, rather than a message that differs (or a module that does not compile)."""
    source = SELF_DOCUMENTING.replace("{ self.out.shape = }", field).replace(
        'raise ValueError(f"', 'raise ValueError(f"""').replace('shape=!s}"', 'shape=!s}"""')
    compile(source, "selfdoc.py", "exec")
    with pytest.raises(BatchifyError) as caught:
        transform(source.encode(), "selfdoc.py", command="batchify")
    assert [(d.code, d.line) for d in caught.value.diagnostics] == [("BFY222", 12)]


@pytest.mark.parametrize("field", [
    "{ x.shape\n        = }",
    r"{x.shape[0] + len('\N{DIGIT ONE}')=}",
    "{x.shape[0] != 3=}",
])
def test_a_self_documenting_field_the_rewrite_leaves_as_written_is_kept(tmp_path: Path, field: str) -> None:
    """The same texts in a field whose expression the rewrite does not change (a local, not the model's state):
    the field stays as written, so Python prints it as it does in the original. On 1823dc0 BFY222 refused them
    all the same."""
    source = SELF_DOCUMENTING.replace("{ self.out.shape = }", field).replace(
        'raise ValueError(f"', 'raise ValueError(f"""').replace('shape=!s}"', 'shape=!s}"""')
    module = imported(tmp_path, source, "selfdoc_kept")
    assert field in (tmp_path / "selfdoc_kept_batched.py").read_text()
    net = module.NetBatched(3, batch_size=2)
    bp.share.save(t=0.0, dt=bm.get_dt(), i=0)
    with pytest.raises(ValueError) as batched_error:
        net.update(bm.ones((2, 4)))
    namespace: dict = {}
    exec(compile(source, "selfdoc_original.py", "exec"), namespace)
    with pytest.raises(ValueError) as original_error:
        namespace["Net"](3).update(bm.ones(4))
    assert str(batched_error.value) == str(original_error.value)


MULTILINE_STRINGS = HEAD + textwrap.dedent('''
    class Net(bp.DynamicalSystem):
        def __init__(self, n):
            super().__init__()
            self.N = bp.dyn.Lif(n, V_rest=0., V_th=1., V_reset=0., tau=5.)
            self.out = bm.Variable(bm.zeros(n))
            self.k = len("""
    ab
    """)

        def update(self, x):
            s = """
    abc
      def
    """
            t = f"""{x.shape}
    {self.out.shape}
    """
            u = "a\\
    b"
            self.out.value = self.N(x) + len(s) + len(t) + len(u) + self.k
            return self.out.value
''')


def test_a_string_over_several_lines_keeps_its_value(tmp_path: Path) -> None:
    """helper-40: main indented every line of a rewritten method, the lines inside a triple-quoted string too,
    so `len(s)` grew by 4 a line (exit 0, verify FAIL, 160 max abs error), and a constructor's string made the
    batched model's `k` differ from the original's."""
    import ast

    module = imported(tmp_path, MULTILINE_STRINGS, "multiline")
    text = (tmp_path / "multiline_batched.py").read_text()
    strings = {n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert {"\nab\n", "\nabc\n  def\n", "ab"} <= strings, strings
    assert "\n{state.out.shape}\n" in text  # (the f-string's second line, as written)
    assert module.NetBatched(3, batch_size=2).k == 4


def test_a_refusal_in_an_augmented_write_to_a_layer_points_at_its_line() -> None:
    """helper-40: main said 1:1 for `self.seq[-1].V.value += ...` after a moved call (the rewrite reported on
    the target it had rebuilt, which has no position in the source)."""
    source = HEAD + textwrap.dedent('''
        class Net(bp.DynamicalSystem):
            def __init__(self, n=4):
                super().__init__()
                self.seq = bp.Sequential(bp.dyn.Lif(n), bp.dnn.Linear(n, n), bp.dyn.Lif(n))

            def update(self, x):
                self.seq[-1].V.value += self.seq(x).max()
                return x
    ''')
    with pytest.raises(BatchifyError) as caught:
        transform(source.encode(), "layer.py", command="batchify")
    assert [(d.code, d.line, d.column) for d in caught.value.diagnostics] == [("BFY205", 10, 9)]


def test_a_layer_read_whole_runs_in_the_batched_model(tmp_path: Path) -> None:
    """fc0ec6e refused `self.library.read(params, state, "seq")` at run time as if the library's own view of
    one example were what a function handed a built-in returned (the fast tier ran no such read)."""
    source = HEAD + textwrap.dedent('''
        class Net(bp.DynamicalSystem):
            def __init__(self, n=4):
                super().__init__()
                self.seq = bp.Sequential(bp.dyn.Lif(n), bp.dnn.Linear(n, n), bp.dyn.Lif(n))

            def update(self, x):
                return self.seq[0].V.value.clip(0.0, self.seq(x).max())
    ''')
    module = imported(tmp_path, source, "layerread")
    assert 'seq = self.library.read(params, state, "seq")' in (tmp_path / "layerread_batched.py").read_text()
    bp.share.save(t=0.0, dt=bm.get_dt(), i=0)
    assert module.NetBatched(batch_size=2).update(bm.ones((2, 4))).shape == (2, 4)
