"""The rewrite rules, in one table: what each rewrites, the unit that does it, and its cases.

Each rule is a small named unit of the rewrite stage (``unit``, relative to the package: a method of
``rewrite.methods.ExprRewriter`` or ``MethodRewriter`` for a stateful method's body, of
``rewrite.classes.ConstructorRewriter`` for the constructor, of ``rewrite.classes.ClassRewriter`` for
the batched class, or of ``aliases`` for the names a Variable goes by). The rewriters try their units
through their own tables (``ExprRewriter.CALL_RULES``, ``MethodRewriter.SMALL_RULES``, ...), and
``tests/test_rules.py`` checks that those tables and this one name the same units, and runs every
rule's before/after case and its no-change case (a look-alike the rule leaves alone). The README's
supported-constructs table is generated from this one (``python scripts/rule_table.py``; a test
checks that they agree). A construct no rule covers is a diagnostic with its own code
(``docs/diagnostics.md``), never a guess.

Nothing here imports LibCST: the table is data.
"""

from __future__ import annotations

from dataclasses import dataclass

PACKAGE = "batchify"


@dataclass(frozen=True)
class Case:
    """A case on the test model of ``tests/test_rules.py``: class ``M`` with a weight ``W``, state ``V``
    and ``S``, a constant ``gain``, a same-file child ``child`` (state ``u``), a stateful ``helper(x)``
    and a stateless ``scale(x)``. ``before`` are lines of ``M.update(self, x)``; ``init`` lines added to
    ``M.__init__``; ``extra`` more methods of ``M`` and then module-level code (another class); ``shared``
    the ``--shared`` declarations. ``after`` is what the rewrite makes of it in ``where`` of class
    ``cls``'s batched class: a method's body (``update_pure``; ``update`` for a method copied
    unchanged), ``__init__`` (the lines made of ``init``), ``body:NAME`` (a method's whole body),
    ``def:NAME`` (its ``def`` line), ``decorator:NAME`` (its decorator lines; none: empty), ``header``
    (the class statement), ``state`` / ``params`` (the
    NamedTuple's fields), ``line:NAME`` (the class-level line binding NAME) or ``copied:NAME`` (a
    module-level class or function copied from the source); a diagnostic reads ``BFYnnn <first word>``."""

    before: str
    after: str
    init: str = ""
    where: str = "update_pure"
    extra: str = ""
    cls: str = "M"
    shared: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()  # --function: the user's own functions to batch


@dataclass(frozen=True)
class Rule:
    name: str
    unit: str  # "rewrite.methods.ExprRewriter.random_draw"
    construct: str  # README: the construct, in words
    example: str  # README: what a user writes (markdown)
    becomes: str  # README: what it is rewritten as (markdown)
    case: Case  # before -> after
    unchanged: Case  # a look-alike the rule leaves alone


EXPR = "rewrite.methods.ExprRewriter"
STMT = "rewrite.methods.MethodRewriter"
INIT = "rewrite.classes.ConstructorRewriter"
CLASS = "rewrite.classes.ClassRewriter"

GROUP = """

class Net(bp.DynSysGroup):
    def __init__(self):
{init}

    def update(self, x):
        self.N.V.value = self.N.V + x
{step}
        return self.N.V.value
"""

RULES: tuple[Rule, ...] = (
    Rule(
        'model classes',
        f"{CLASS}.bases",
        'model classes',
        ('bases `bp.DynamicalSystem`, `bp.DynSysGroup`, `bp.Network`, `bp.NeuGroup`, '
         '`bp.dyn.NeuDyn`, `bp.dnn.Layer`, … or a model class of the same file'),
        ('`FooBatched(bfy.Batched, <the same bases>, params=FooParams, state=FooState)`; a '
         'same-file base becomes its `…Batched`, which already is a `bfy.Batched`'),
        Case(before='return self.V * Config.n',
             after='class MBatched(bfy.Batched, bp.DynamicalSystem, params=MParams, state=MState):',
             where='header',
             extra=('\n'
                    '\n'
                    'class Config:\n'
                    '    n = 3\n')),
        Case(before='return self.V * Config.n',
             after=('class Config:\n'
                    '    n = 3'),
             where='copied:Config',
             extra=('\n'
                    '\n'
                    'class Config:\n'
                    '    n = 3\n')),
    ),
    Rule(
        'declarations',
        f"{CLASS}.declarations",
        'what the runtime reads',
        ('Variables learned online (`--shared w=mean`), built-ins, Variables created by '
         '`reset_state`'),
        ('declared in the class statement (`shared={"w": "mean"}`, `builtins=("fc",)`, '
         '`created_by_reset=("h",)`): `bfy.Batched` derives `params()`, `state()`, `from_model`, '
         '`set_batch_size`, `reset_state`, `state_axes()` and `reduced()` from them and the '
         'NamedTuples'),
        Case(before='return self.fc(x)',
             after=('class MBatched(bfy.Batched, bp.DynamicalSystem, params=MParams, state=MState, builtins=("fc",)):'),
             init='self.fc = bp.dnn.Dense(3, 3)',
             where='header'),
        Case(before='return self.V',
             after='class MBatched(bfy.Batched, bp.DynamicalSystem, params=MParams, state=MState):',
             where='header'),
    ),
    Rule(
        'fields',
        f"{CLASS}.code",
        'weights and state',
        ('`bm.TrainVar(...)` / `bm.Parameter(...)`; `bm.Variable(...)`, `bp.init.variable_(...)`; '
         'a same-file child; a `bm.VarList` / `bm.VarDict`; a Variable created on some paths only'),
        ("fields of `FooParams` (`jax.Array`, the child's `…Params`) and `FooState` (`jax.Array`, "
         "`list[jax.Array]`, `dict[str, jax.Array]`, `jax.Array | None`, the child's `…State`)"),
        Case(before='return self.V',
             after=('V: jax.Array\n'
                    'S: jax.Array\n'
                    'traces: list[jax.Array]\n'
                    'Q: jax.Array | None\n'
                    'child: ChildState'),
             init=('self.traces = bm.VarList([bm.Variable(bm.zeros(3)), bm.Variable(bm.zeros(3))])\n'
                   'if self.gain > 1.0:\n'
                   '    self.Q = bm.Variable(bm.zeros(2))'),
             where='state'),
        Case(before='return self.V',
             after=('V: jax.Array\n'
                    'S: jax.Array\n'
                    'child: ChildState'),
             init='self.consts = [1.0, 2.0]',
             where='state'),
    ),
    Rule(
        'batched method',
        f"{CLASS}.wrapper",
        'stepping methods',
        ('`def update(self, x)`, `def step_run(self, i, x)` with `--shared i`, the old '
         '`update(self, tdi, x)` (a child\'s, called as `self.a(x)`, is handed `bp.share.get_shargs()` first, as '
         'BrainPy hands it: by the name `tdi`/`sh`/`sha`, or for any first parameter where the call does not '
         'bind without it), keyword-only parameters (`update(self, x, *, gain=1.0)`, mapped by name)'),
        ('`update = bfy.batched_method("update_pure")`: `jax.vmap` of the pure method over the '
         'state and every per-example argument, with the original\'s signature; `shared=("i",)` '
         'names the arguments every example shares (`tdi`, `_t`, `_dt` always are, and so is an argument '
         'left at its default); a tuple or dict of arrays is split per example, leaf by leaf; run by the '
         'constructor (a burn-in in `__init__`), it steps the one example the constructor is building'),
        Case(before='return self.V + x',
             after='update = bfy.batched_method("update_pure")',
             where='line:update',
             extra=('\n'
                    '    def step_run(self, i, x):\n'
                    '        self.V.value = self.V + x * i\n'
                    '        return self.V.value\n')),
        Case(before='return self.V + x',
             after='step_run = bfy.batched_method("step_run_pure", shared=("i",))',
             where='line:step_run',
             extra=('\n'
                    '    def step_run(self, i, x):\n'
                    '        self.V.value = self.V + x * i\n'
                    '        return self.V.value\n'),
             shared=('i',)),
    ),
    Rule(
        'model names',
        f"{CLASS}.renamed",
        'references to a model class of the file',
        '`super(Foo, self)`, `isinstance(x, Foo)`, `Foo.helper(...)`',
        'name its batched class `FooBatched` (the generated module defines no `Foo`)',
        Case(before=('if isinstance(self, M):\n'
                     '    return self.V\n'
                     'return x'),
             after=('if isinstance(self, MBatched):\n'
                    '    return bfy.unwrap(state), state.V\n'
                    'return bfy.unwrap(state), x')),
        Case(before=('if isinstance(self, bp.DynamicalSystem):\n'
                     '    return self.V\n'
                     'return x'),
             after=('if isinstance(self, bp.DynamicalSystem):\n'
                    '    return bfy.unwrap(state), state.V\n'
                    'return bfy.unwrap(state), x')),
    ),
    Rule(
        'reserved names',
        'rewrite.classes.ModelNameRenamer.leave_Attribute',
        'an attribute named like a member of the batched class',
        '`self.state = bm.Variable(...)`; `self.params = config` (a plain attribute)',
        ('kept as `state` in `FooState`, the attribute is `self.state_`; a plain attribute is '
         '`self.params_`'),
        Case(before='return self.state * self.params',
             after='return bfy.unwrap(state), state.state * self.params_',
             init=('self.state = bm.Variable(bm.zeros(3))\n'
                   'self.params = 3.0')),
        Case(before='return self.status * x',
             after='return bfy.unwrap(state), state.status * x',
             init='self.status = bm.Variable(bm.zeros(3))'),
    ),
    Rule(
        'constructor signature',
        f"{INIT}.constructor_signature",
        'the constructor',
        '`def __init__(self, n, tau=10.0)`',
        ('the original body with `*, batch_size` (and `seed=None` when the model draws random '
         'numbers; `batch_seed=` when it has a `seed` of its own) and `self.batch_size = '
         "batch_size` first, since BrainPy's constructor already reads `self.mode`"),
        Case(before='return self.V + bm.random.normal(0.0, 1.0, 3)',
             after='def __init__(self, *, batch_size, seed=None):',
             where='def:__init__'),
        Case(before='return self.V + bm.random.normal(0.0, 1.0, 3)',
             after='def scale(self, x):',
             where='def:scale'),
    ),
    Rule(
        'batch size first',
        f"{INIT}.set_batch_size_first",
        'the batch size',
        '`super().__init__()` reading `self.mode`',
        ("`self.batch_size = batch_size` before the original's first statement (after a "
         "docstring); while the constructor builds one example's model, `self.mode` is the original's"),
        Case(before='return self.V',
             after=('self.batch_size = batch_size\n'
                    'super().__init__()\n'
                    'self.gain = 2.0\n'
                    'self.W = bm.TrainVar(bm.ones(3))\n'
                    'self.V = bfy.batched(bm.Variable(bm.zeros(3)), batch_size)\n'
                    'self.S = bfy.batched(bm.Variable(bm.zeros(3)), batch_size)\n'
                    'self.child = ChildBatched(batch_size=batch_size)\n'
                    'self.tau = 10.0'),
             init='self.tau = 10.0',
             where='body:__init__'),
        Case(before='return self.V',
             after='return self.gain * x',
             where='body:scale'),
    ),
    Rule(
        'batched Variables',
        f"{INIT}.batched_variable",
        'Variables in `__init__`',
        ('`bm.Variable(bm.zeros(n))`, `bm.Variable(n)`, `…, dtype=bm.int32)`, '
         '`bp.init.variable_(bm.zeros, n, self.mode)`, `self.init_variable(bm.zeros, None)` (the spelling of '
         "BrainPy's own neurons); several unpacked at once (`self.a, self.b = bm.Variable(x), bm.Variable(y)`); "
         "a function of the file whose every `return` makes one (`self.V = _state(n, v)`); a class of the file "
         "deriving from `bm.Variable` or `bm.TrainVar` (`self.b = YourVar(x)`)"),
        ('`bfy.batched(bm.Variable(...), batch_size)`: one example\'s Variable while the constructor runs '
         '(shapes read in `__init__` are the example\'s), a leading batch axis (`batch_axis=0`) once it is done; '
         'each element of an unpacking in place'),
        Case(before='return self.Q',
             after='self.Q = bfy.batched(bm.Variable(bm.ones(2), dtype=bm.float32), batch_size)',
             init='self.Q = bm.Variable(bm.ones(2), dtype=bm.float32)',
             where='__init__'),
        Case(before='return self.V * self.R',
             after='self.R = bm.TrainVar(bm.ones(3))',
             init='self.R = bm.TrainVar(bm.ones(3))',
             where='__init__'),
    ),
    Rule(
        'batched children',
        f"{INIT}.batched_child",
        'same-file children',
        '`self.hidden = DenseLIF(n_in, n)`',
        '`self.hidden = DenseLIFBatched(n_in, n, batch_size=batch_size)`',
        Case(before='return self.V + self.other(x)',
             after='self.other = ChildBatched(batch_size=batch_size)',
             init='self.other = Child()',
             where='__init__'),
        Case(before='return self.V',
             after='self.cfg = dict(n=3)',
             init='self.cfg = dict(n=3)',
             where='__init__'),
    ),
    Rule(
        'state created by a reset',
        f"{INIT}.reset_creates_state",
        'Variables created in `reset_state`',
        ('`__init__` calls `self.reset_state(self.mode)`, which does `self.h = '
         'bp.init.variable_(init, n, batch_size)`'),
        ('state fields; the batched `__init__` calls `self._create_state(self.mode)`, which runs '
         '`reset_state_pure` with the same arguments on every example'),
        Case(before=('self.h.value = self.h + x\n'
                     'return self.h.value'),
             after='self._create_state(self.mode)',
             init='self.reset_state(self.mode)',
             where='__init__',
             extra=('\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        self.h = bp.init.variable_(bm.zeros, 3, batch_size)\n')),
        Case(before='return self.V',
             after='self.reset_counter()',
             init='self.reset_counter()',
             where='__init__',
             extra=('\n'
                    '    def reset_counter(self):\n'
                    '        return 0\n')),
    ),
    Rule(
        "state left to the user's reset",
        f"{INIT}.late_state",
        '… and `__init__` never calls it',
        "the model's users call `model.reset_state()` before running it",
        ('the same fields; the batched `__init__` ends with `self._create_state()`, and '
         '`from_model` of a model not reset yet resets every example as the model would be'),
        Case(before=('self.h.value = self.h + x\n'
                     'return self.h.value'),
             after=('self.n = 3\n'
                    '# M leaves its state to reset_state(), which its users call before running.\n'
                    'self._create_state()'),
             init='self.n = 3',
             where='__init__',
             extra=('\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        self.h = bm.Variable(bm.zeros(self.n))\n')),
        Case(before='return self.V',
             after='self.n = 3',
             init='self.n = 3',
             where='__init__',
             extra=('\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        self.V.value = bm.zeros(self.n)\n')),
    ),
    Rule(
        'construction helpers',
        'rewrite.classes.ClassRewriter.construction_helper',
        'Variables and children created by a method only `__init__` calls',
        "`self._init_weights(n_in, n)` in `__init__` (or in another such method), a method nothing else names",
        ('fields and children like those `__init__` creates; the batched class\'s copy builds them batched, '
         'with `self.batch_size`; a field it creates on every path is certain where its call is'),
        Case(before=('self.T.value = self.T + x\n'
                     'return self.T.value'),
             after='self.T = bfy.batched(bm.Variable(bm.zeros(3)), self.batch_size)',
             init='self._make_trace()',
             where='body:_make_trace',
             extra=('\n'
                    '    def _make_trace(self):\n'
                    '        self.T = bm.Variable(bm.zeros(3))\n')),
        Case(before=('self._make_trace()\n'
                     'return self.T.value'),
             after='BFY209 self.T.value:',
             init='self._make_trace()',
             where='body:_make_trace',
             extra=('\n'
                    '    def _make_trace(self):\n'
                    '        self.T = bm.Variable(bm.zeros(3))\n')),
    ),
    Rule(
        'class factories',
        'rewrite.classes.ClassRewriter.factory',
        'a classmethod building the class',
        '`@classmethod def from_config(cls, cfg): return cls(cfg["n"])`',
        ('copied, taking the batch size as the batched constructor does (`*, batch_size`, and `seed=None` '
         'for a random model) and passing it on: `cls(cfg["n"], batch_size=batch_size)`'),
        Case(before='return self.V.value',
             after='def make(cls, *, batch_size):',
             where='def:make',
             extra=('\n'
                    '    @classmethod\n'
                    '    def make(cls):\n'
                    '        return cls()\n')),
        Case(before='return self.V.value',
             after='def names(cls):',
             where='def:names',
             extra=('\n'
                    '    @classmethod\n'
                    '    def names(cls):\n'
                    '        return [cls.__name__]\n')),
    ),
    Rule(
        'Variables made in a local',
        f"{INIT}.batched_local",
        'a Variable made into a name of `__init__`, then stored on `self`',
        ('`weight = bm.TrainVar(weight)` under `if isinstance(self.mode, bm.TrainingMode):`, then '
         '`self.W = weight` (as `bp.dnn.Linear` does); `h = bm.Variable(...)`, then `self.h = h`'),
        ('a field like `self.W = bm.TrainVar(...)`; a state Variable is batched where it is stored: '
         '`self.h = bfy.batched(h, batch_size)` (refused, BFY102, when the name is used otherwise: handed '
         'to a call or stored twice would be a second name for the Variable)'),
        Case(before=('self.T.value = self.T + x\n'
                     'return self.T.value'),
             after=('trace = bm.Variable(bm.zeros(3))\n'
                    'self.T = bfy.batched(trace, batch_size)'),
             init=('trace = bm.Variable(bm.zeros(3))\n'
                   'self.T = trace'),
             where='__init__'),
        Case(before=('self.T.value = self.T + x\n'
                     'return self.T.value'),
             after='BFY102 this',
             init=('trace = bm.Variable(bm.zeros(3))\n'
                   'self.T = trace\n'
                   'self.T2 = trace'),
             where='__init__'),
    ),
    Rule(
        'built-ins attached',
        f"{INIT}.attach_builtins",
        'BrainPy built-in children, held as library code',
        ('`self.fc = bp.dnn.Dense(...)`, `self.N = bp.dyn.LifRef(...)`, projections (a class of the file '
         "derived from `bp.Projection` too), `bp.VarDelay`, `bm.LengthDelay`, `bp.Sequential`, a model's own "
         '`bm.random.RandomState`; built by a function of the file whose every `return` builds it '
         '(`self.E2E = _projection(self.E, self.E, w)`), or into a local stored on `self` once (`E = '
         'bp.neurons.LIF(n); self.E = E`); a slice of one (`self.E[:k]`, a view of its Variables)'),
        ("not re-implemented: `bfy.attach_library(self, batch_size)` keeps the built-ins' "
         'single-example Variables and the batch of their values (`self.library`, a '
         '`bfy.Library`); a Variable of the class given to one (`bm.LengthDelay(self.V, 3)`) is '
         'bound from `state.V`; a child model of the file given to one (`post=self.N`, a neuron of the '
         'file reading its projections with `sum_current_inputs`) joins the library, built from its own '
         'class, copied as written; so does a class of the file given the models of its parent '
         '(`self.E2I = ExpSyn(self.E, self.I)`, a synapse stepping `self.pre.spike` and `self.post.input`), '
         'with the models it is given, and it has no batched class of its own (BFY219); a model of the file that '
         "code copied as written builds (a projection class's `comm=IndLinear(...)`, a library neuron's own child) "
         'is copied as written too'),
        Case(before='return self.fc(x)',
             after=('self.fc = bp.dnn.Dense(3, 3)\n'
                    'self.rng_key = bfy.key_variable(seed, batch_size)\n'
                    'bfy.attach_library(self, batch_size)'),
             init='self.fc = bp.dnn.Dense(3, 3)',
             where='__init__'),
        Case(before='return self.V',
             after='self.fn = bm.tanh',
             init='self.fn = bm.tanh',
             where='__init__'),
    ),
    Rule(
        'state read',
        f"{EXPR}.state_read",
        'reads',
        '`self.V`, `self.V.value`, `self.V.shape`, `self.child.u`',
        '`state.V`, `state.V.shape`, `state.child.u`; weights from `params`',
        Case(before=('self.S.value = self.V.shape[0] * self.child.u\n'
                     'return self.V + self.W.value'),
             after=('state = state._replace(S=state.V.shape[0] * state.child.u)\n'
                    'return bfy.unwrap(state), state.V + params.W')),
        Case(before='return self.gain * x',
             after='return self.gain * x',
             where='update'),
    ),
    Rule(
        'item read',
        f"{EXPR}.container_item_read",
        'items of a `bm.VarList` / `bm.VarDict`',
        ('`self.traces[i].value`, `for t in self.traces` (`t.value`), `t = self.traces[0]`, '
         '`for k, t in self.stats.items()`'),
        ('`state.traces[i]`: a list / dict of arrays; a local every binding of which is an item is the '
         'item\'s value (`t.value` -> `t`)'),
        Case(before=('total = self.traces[1].value + self.V\n'
                     'for i, t in enumerate(self.traces):\n'
                     '    total = total + t.value * i\n'
                     'return total'),
             after=('total = state.traces[1] + state.V\n'
                    'for i, t in enumerate(state.traces):\n'
                    '    total = total + t * i\n'
                    'return bfy.unwrap(state), total'),
             init='self.traces = bm.VarList([bm.Variable(bm.zeros(3)), bm.Variable(bm.zeros(3))])'),
        Case(before=('t = self.consts[1]\n'
                     'return t.value + x'),
             after=('t = self.consts[1]\n'
                    'return t.value + x'),
             init='self.consts = [Box(), Box()]',
             where='update',
             extra=('\n'
                    '\n'
                    'class Box:\n'
                    '    value = 1.0\n')),
    ),
    Rule(
        'mode read',
        f"{EXPR}.mode_read",
        'mode branches',
        '`if isinstance(self.mode, bm.BatchingMode): ...` in a stepping method',
        ("`self.mode` reads `bfy.example_mode(self)`, the original model's mode (`mode=`, or BrainPy's "
         "when it was built): the branch the original takes, `TrainingMode`'s surrogate included"),
        Case(before=('if isinstance(self.mode, bm.BatchingMode):\n'
                     '    return x\n'
                     'return self.V'),
             after=('if isinstance(bfy.example_mode(self), bm.BatchingMode):\n'
                    '    return bfy.unwrap(state), x\n'
                    'return bfy.unwrap(state), state.V')),
        Case(before='return self.mode_name, self.V',
             after='return bfy.unwrap(state), (self.mode_name, state.V)',
             init="self.mode_name = 'plain'"),
    ),
    Rule(
        'built-in read',
        f"{EXPR}.builtin_read",
        "reads of a built-in's Variables",
        '`self.N.spike.value`, `self.N.V`, `self.seq[-1].spike` (an item of a `bp.Sequential`)',
        ('`self.library.read(params, state, "N.spike")`; an item is indexed on the built-in read whole, '
         '`self.library.read(params, state, "seq")[-1].spike`, one example\'s view of it (a property of it, '
         '`self.seq[0].h`, computed in a library call binding the same example; of a callable object, '
         'callable, as `callable()` sees the object, and refused when called); a read Python makes '
         'before a call in the same statement that may change it (`self.N.V.value + self.N(x)`, '
         '`self.N.V * 2 + self.N(x)`) moves in front of the call with it (`N_V = self.library.read(params, '
         'state, "N.V")`); the Variable object itself is read where the operation taking it runs, so '
         '`self.N.V + self.N(x)` adds the value the call left, as in Python; so does `V` of `V = self.N.V` read '
         'after such a call'),
        Case(before='return self.N.spike.value',
             after='return bfy.unwrap(state), self.library.read(params, state, "N.spike")',
             init='self.N = bp.dyn.Lif(3)'),
        Case(before='return self.V * self.n_out',
             after='return bfy.unwrap(state), state.V * self.n_out',
             init=('self.N = bp.dyn.Lif(3)\n'
                   'self.n_out = 3')),
    ),
    Rule(
        'built-in call',
        f"{EXPR}.builtin_call",
        'calls of a built-in',
        '`self.fc(x)`, `self.N.update(x)`, `self.seq[0](x)` (an item of a `bp.Sequential`)',
        ("`state, fc_out = self.library.call(params, state, self.fc, x)`: one example's values "
         "(and random key) bound into the built-in's Variables for the call, the old values put "
         'back'),
        Case(before='return self.fc(x)',
             after=('state, fc_out = self.library.call(params, state, self.fc, x)\n'
                    'return bfy.unwrap(state), fc_out'),
             init='self.fc = bp.dnn.Dense(3, 3)'),
        Case(before='return self.scale(x) + self.V',
             after='return bfy.unwrap(state), self.scale(x) + state.V',
             where='update_pure'),
    ),
    Rule(
        'children handed to a group',
        "analyse.children_as_attributes",
        "children handed to a group's constructor",
        ('`E = bp.dyn.LifRef(n)`, `E2I = bp.dyn.ProjAlignPostMg2(pre=E, ...)`, then '
         '`super().__init__(E2I, E=E)` in a `bp.DynSysGroup` / `bp.Network` (BrainPy\'s EI-network examples)'),
        ("`super().__init__()` followed by `self.E2I = E2I` and `self.E = E`, in the order the group registers "
         "them; the class statement declares that order (`registered=(\"E2I\", \"E\")`), so that `from_model` "
         "finds them in the original's `self.children`. A model of the file (batched only where it is built on "
         "its attribute), one handed as an expression, a parameter or a name bound twice, one given its own "
         "`name=` (registered under it), or under a name the group has itself (`nodes`, `children`) or the class "
         "or a subclass stores, and a class reading `self.children`, are BFY105"),
        Case(before='return x', after=('self.batch_size = batch_size\nN = bp.dyn.Lif(3)\nsuper().__init__()\nself.N = N\n'
                               'self.rng_key = bfy.key_variable(seed, batch_size)\nbfy.attach_library(self, batch_size)'),
             cls='Net',
             where='body:__init__', extra=GROUP.format(init='        N = bp.dyn.Lif(3)\n        super().__init__(N=N)',
                                                        step='        super().update()')),
        Case(before='return x', after=('self.batch_size = batch_size\nsuper().__init__(name="net")\nself.N = bp.dyn.Lif(3)\n'
                               'self.rng_key = bfy.key_variable(seed, batch_size)\nbfy.attach_library(self, batch_size)'),
             cls='Net',
             where='body:__init__', extra=GROUP.format(init='        super().__init__(name="net")\n'
                                                             '        self.N = bp.dyn.Lif(3)',
                                                        step='        super().update()')),
    ),
    Rule(
        'update of a group of built-ins',
        f"{EXPR}.group_update_call",
        "`super().update()` of a group of built-ins",
        '`self.N.V.value += x` then `super().update()` in a `bp.DynSysGroup` holding BrainPy built-ins',
        ("`state, _ = self.library.call(params, state, super().update)`: BrainPy's group update (projections, "
         "then dynamics, then the rest) with one example's values bound into the built-ins, as for a group with "
         "no update of its own (past a base of the file that has none, `super(NetBatched, self).update`); "
         "`super().update(x)` of a base of the file is its pure method (below); a group holding models of the "
         "file beside built-ins is BFY220"),
        Case(before='return x', after=('state = self.library.write(state, "N.V", self.library.read(params, state, '
                                       '"N.V") + x)\nstate, _ = self.library.call(params, state, super().update)\n'
                                       'return bfy.unwrap(state), self.library.read(params, state, "N.V")'),
             cls='Net', extra=GROUP.format(init='        super().__init__()\n        self.N = bp.dyn.Lif(3)',
                                           step='        super().update()')),
        Case(before='return x', after='state, update_out = super().update_pure(params, state, x)\n'
                                      'return bfy.unwrap(state), update_out',
             cls='Sub', extra=GROUP.format(init='        super().__init__()\n        self.N = bp.dyn.Lif(3)',
                                           step='        super().update()')
             + '\n\nclass Sub(Net):\n    def update(self, x):\n        return super().update(x)\n'),
    ),
    Rule(
        'built-in handed to a function',
        f"{EXPR}.builtin_argument_call",
        'a built-in given to a function',
        '`rate_of(self.N)`, `drive(self.seq[0], x)`: a function of the file (or imported) given a built-in whole',
        ("`state, rate_of_out = self.library.call(params, state, rate_of, self.N)`: the function runs as a "
         "call of the built-in does, with one example's values bound into its Variables, which it may read or "
         "step; what it returns must be values (arrays, numbers, containers or dataclasses of them): the built-in "
         "or its Variables returned, or kept aside (a global, an object) and read after the call, are refused "
         "when the step runs; a built-in of a child model is BFY104; `len()`, `isinstance()` and Python's other "
         "built-in functions are left as written (`type()`: the rule below)"),
        Case(before='return rate_of(self.N, x)',
             after=('state, rate_of_out = self.library.call(params, state, rate_of, self.N, x)\n'
                    'return bfy.unwrap(state), rate_of_out'),
             init='self.N = bp.dyn.Lif(3)',
             extra=('\n'
                    '\n'
                    'def rate_of(neurons, x):\n'
                    '    return neurons.spike.value * x\n')),
        Case(before='return isinstance(self.N, bp.dyn.Lif) * x',
             after='return bfy.unwrap(state), isinstance(self.N, bp.dyn.Lif) * x',
             init='self.N = bp.dyn.Lif(3)'),
    ),
    Rule(
        'what a Variable is',
        f"{EXPR}.variable_object",
        '`isinstance()`, `type()` of a Variable',
        ('`isinstance(self.V, bm.Variable)`, `type(self.V)`, `isinstance(self.xs[0], bm.Variable)`, '
         '`isinstance(self.N.V, bm.Variable)`'),
        ("asked of the Variable object, not of the value a step holds: the model's own Variable (or an item of its "
         "`bm.VarList`) is the batched model's Variable at the same place (`isinstance(self.V, bm.Variable)`: a "
         "Variable of the same kind, with the batch in it), a built-in's is the object at that place "
         "(`isinstance(self.library.resolve(\"N.V\"), bm.Variable)`); a Variable's value or an element of it "
         "(`isinstance(self.V.value, ...)`, `self.N.V[0]`) and every other argument are left as written; "
         "`hasattr()` of a Variable for what only a Variable has (`hasattr(self.V, \"value\")`; it cannot be read "
         "whole in the step), and a function of the file that is handed the model's Variable and asks what it is, "
         "there or in a function it hands it to (`type(a)`, `a.__class__`, `isinstance(a, C)` of any `C` but plain "
         "Python types such as `float`: `bm.Variable`, `bm.Array`, a class held by a local; `hasattr(a, \"value\")`; "
         "it is handed each example's value), or is handed a path under a built-in and asks `isinstance()` of a "
         "Variable class (`self.N.V` may be a Variable), are refused (BFY213)"),
        Case(before='return x * isinstance(self.V, bm.Variable) * (type(self.W) is bm.TrainVar) * self.V',
             after=('return bfy.unwrap(state), x * isinstance(self.V, bm.Variable) * (type(self.W) is bm.TrainVar) '
                    '* state.V')),
        Case(before='return x * isinstance(self.V.value, bm.Variable) * isinstance(x, float)',
             after='return bfy.unwrap(state), x * isinstance(state.V, bm.Variable) * isinstance(x, float)'),
    ),
    Rule(
        'class of a Variable',
        f"{EXPR}.variable_class",
        '`.__class__` of a Variable',
        '`self.V.__class__`, `self.child.u.__class__.__name__`, `self.xs[0].__class__` of a `bm.VarList`',
        ("the class of the Variable object, as `type(self.V)`: read of the batched model's Variable (or "
         "container's item) at the same place (a Variable of the same kind), not of the value a step holds; "
         "`self.V.value.__class__` is the value's, left as written"),
        Case(before='return x * (self.V.__class__ is bm.Variable)',
             after='return bfy.unwrap(state), x * (self.V.__class__ is bm.Variable)'),
        Case(before='return x * len(self.V.value.__class__.__name__)',
             after='return bfy.unwrap(state), x * len(state.V.__class__.__name__)'),
    ),
    Rule(
        'type of a built-in',
        f"{EXPR}.builtin_type",
        '`type()` of a built-in',
        '`type(self.N)`, `type(self.seq[0]).__name__`, `type(self.proj.refs["syn"])`',
        ("`self.N.__class__`: the batched model reaches a built-in (or an object inside one) through a view of "
         "it, whose `__class__` is the object's (what `isinstance` sees) and whose `type()` is not; each built-in "
         "has one view, equal to and hashed as the built-in (`self.N is self.N`, a dict keyed by it); `type()` of "
         "a name of the method's own or of a call's result is `type(bfy.unviewed(m))` ('identity handed to a "
         "function'); `type()` of a place inside a built-in reached by attributes (`type(self.N.V)`, `type(V)` of "
         "`V = self.N.V`) is the class of the object there, `type(self.library.resolve(\"N.V\"))`, a Variable's "
         "rather than its value's"),
        Case(before='return len(type(self.N).__name__) * x',
             after='return bfy.unwrap(state), len(self.N.__class__.__name__) * x',
             init='self.N = bp.dyn.Lif(3)'),
        Case(before='return len(type(self).__name__) * self.V',
             after='return bfy.unwrap(state), len(type(self).__name__) * state.V',
             init='self.N = bp.dyn.Lif(3)'),
    ),
    Rule(
        'id of a built-in',
        f"{EXPR}.builtin_id",
        '`id()` of a built-in',
        ('`id(self.N)`, `id(self.proj.post)`, `id(self.N.V)`, `id(self.seq[0].V)`, `id(p)` of `p = self.proj.post`, '
         '`id(V)` of `V = self.N.V`'),
        ("`id(bfy.unviewed(self.N))`: the id of the built-in (or of the object inside one) behind the view the "
         "batched model reaches it through, which is what the constructor, holding the objects themselves, "
         "recorded; a place inside a built-in reached by attributes and items (`id(self.proj.post)`, "
         "`id(self.N.V)`, `id(self.proj.refs[\"post\"].V)`, or a local bound to one, `V = self.N.V`), is the id "
         "of the object at that place, `id(self.library.resolve(\"N.V\"))` (a Variable, not the value a step "
         "reads of it); "
         "`id()` of the model's own Variable (`id(self.V)`) is refused (BFY213): the step holds its value, not "
         "the Variable"),
        Case(before=('U = self.seq[0].V\n'
                     'return x * (id(self.N) == self.key) * (id(self.N.V) == self.vkey) * (id(U) == self.vkey)'),
             after=('U = self.library.read(params, state, "seq")[0].V\nreturn bfy.unwrap(state), x * '
                    '(id(bfy.unviewed(self.N)) == self.key) * (id(self.library.resolve("N.V")) == self.vkey) * '
                    '(id(self.library.resolve("seq")[0].V) == self.vkey)'),
             init=('self.N = bp.dyn.Lif(3)\nself.seq = bp.Sequential(bp.dyn.Lif(3))\nself.key = id(self.N)\n'
                   'self.vkey = id(self.N.V)')),
        Case(before='return self.V * (id(self.child) == 0)',
             after='return bfy.unwrap(state), state.V * (id(self.child) == 0)',
             init='self.N = bp.dyn.Lif(3)'),
    ),
    Rule(
        'identity inside a built-in',
        f"{EXPR}.builtin_identity",
        '`is` of an object inside a built-in',
        '`self.proj.post is self.N`, `self.proj.refs["syn"] is not self.syn`, `self.seq[0].V is V`',
        ("`self.library.resolve(\"proj.post\") is bfy.unviewed(self.N)`: the batched model reaches a built-in "
         "through the batch's view and an object inside one through one example's view, two views of one object; "
         "`is` compares the objects behind them (`bfy.unviewed`), also for a local bound to an object inside a "
         "built-in (`p = self.proj.post`) or a built-in against anything else (`list(d)[0] is self.N`); an object "
         "reached by attributes and items inside a built-in (`self.proj.post`, `self.seq[0].V`, or `V` of "
         "`V = self.N.V`) is the object at that place, `self.library.resolve(\"seq\")[0].V`, a Variable "
         "rather than the value a step reads of it; "
         "`==`, `in` and a dict keyed by the built-in need no rewrite: both views are equal to and hashed as the "
         "object; `is None`, and two built-ins (`self.N is self.P`: one view each) are left alone; an `is` test "
         "or an `id()` is not a Variable's value, so a Python `if` may take it"),
        Case(before='return x * (self.P.post is self.N)',
             after='return bfy.unwrap(state), x * (self.library.resolve("P.post") is bfy.unviewed(self.N))',
             init='self.N = bp.dyn.Lif(3)\nself.P = bp.dyn.Lif(3)'),
        Case(before='return x * (self.P.post is not None) * (self.N is self.P)',
             after=('return bfy.unwrap(state), x * (self.library.read(params, state, "P.post") is not None) '
                    '* (self.N is self.P)'),
             init='self.N = bp.dyn.Lif(3)\nself.P = bp.dyn.Lif(3)'),
    ),
    Rule(
        'identity handed to a function',
        "rewrite.methods.ViewIdentity",
        "`id()`, `type()` or `is` of a function's own name or of a call's result, in a file whose models hold built-ins",
        ('`def key_of(self, m): return id(m)` called as `self.key_of(self.proj.post)`; `m is k`, `type(m)` in a '
         'function of the file; `id(first([self.proj.post]))`'),
        ("`id(bfy.unviewed(m))`, `type(bfy.unviewed(m))`, `bfy.unviewed(m) is bfy.unviewed(k)`: a parameter or "
         "local of a method, function or lambda of the file, or an item or attribute of one (`ms[0]`), may hold "
         "one example's view of an object inside a built-in that it was handed, and a call may give one back, "
         "whose identity and class are the object's; in the steps "
         "(`ExprRewriter.builtin_object`), in methods copied as written, class attributes and the file's "
         "functions; a model "
         "method's `self`, the module's names and `is None` are left alone, and so are helper classes of the "
         "file (verify runs the source's own in their place); `id` handed on as a function (`key=id`) is "
         "refused (BFY213)"),
        Case(before='return self.N(x)',
             after='return id(bfy.unviewed(m)) == self.key',
             where='body:key_of',
             init='self.N = bp.dyn.Lif(3)\nself.key = id(self.N)',
             extra=('\n'
                    '    def key_of(self, m):\n'
                    '        return id(m) == self.key\n')),
        Case(before='return self.N(x)',
             after='return m is None or isinstance(m, float)',
             where='body:kind_of',
             init='self.N = bp.dyn.Lif(3)',
             extra=('\n'
                    '    def kind_of(self, m):\n'
                    '        return m is None or isinstance(m, float)\n')),
    ),
    Rule(
        'built-in pipe',
        f"{EXPR}.builtin_pipe",
        '`>>` into a built-in',
        '`x >> self.fc`',
        "`self.library.call(params, state, self.fc, x)` (BrainPy's `__rrshift__`)",
        Case(before='return x >> self.fc',
             after=('state, fc_out = self.library.call(params, state, self.fc, x)\n'
                    'return bfy.unwrap(state), fc_out'),
             init='self.fc = bp.dnn.Dense(3, 3)'),
        Case(before='return (x >> 1) + self.V',
             after='return bfy.unwrap(state), (x >> 1) + state.V'),
    ),
    Rule(
        'own stateful call',
        f"{EXPR}.own_call",
        'own stateful calls',
        '`y = self.helper(x)`, `super().update(x)`',
        ('`state, y = self.helper_pure(params, state, x)`, moved in front of the statement, '
         'innermost first'),
        Case(before='return self.scale(self.helper(x))',
             after=('state, helper_out = self.helper_pure(params, state, x)\n'
                    'return bfy.unwrap(state), self.scale(helper_out)')),
        Case(before='return self.scale(x) + self.V',
             after='return bfy.unwrap(state), self.scale(x) + state.V'),
    ),
    Rule(
        'value of a returned Variable',
        f"{EXPR}.call_result_value",
        "`.value` of what a stateful call returns",
        '`y = self.step(x).value`, where `step` returns a Variable (`return self.S`)',
        ('`state, step_out = self.step_pure(params, state, x)` and `y = step_out`: the pure method hands '
         'back the value'),
        Case(before='return self.helper2(x).value * 2.0',
             after=('state, helper2_out = self.helper2_pure(params, state, x)\n'
                    'return bfy.unwrap(state), helper2_out * 2.0'),
             extra=('    def helper2(self, x):\n'
                    '        self.S.value = x\n'
                    '        return self.S\n')),
        Case(before='return self.scale(x).value * self.V',
             after='return bfy.unwrap(state), self.scale(x).value * state.V'),
    ),
    Rule(
        'super call',
        f"{EXPR}.own_call",
        "a same-file base's method",
        ('`y = super().update(x)` in `class Sub(M)`; `super(Mid, self).update(x)`; `M.update(self, x)`, '
         'a base\'s method through its class'),
        ('`state, update_out = super().update_pure(params, state, x)`; `super(MidBatched, self)` keeps '
         'reaching past `Mid`; `M.update(self, x)` is `super().update_pure(...)` (`super(C, self)` for a '
         'base further up, C the class below it)'),
        Case(before='return self.V',
             after=('state, y = super().update_pure(params, state, x)\n'
                    'state = state._replace(S=y)\n'
                    'return bfy.unwrap(state), state.S'),
             extra=('\n'
                    '\n'
                    'class Sub(M):\n'
                    '    def update(self, x):\n'
                    '        y = super().update(x)\n'
                    '        self.S.value = y\n'
                    '        return self.S.value\n'),
             cls='Sub'),
        Case(before='return self.V',
             after=('y = super().scale(x)\n'
                    'state = state._replace(S=y)\n'
                    'return bfy.unwrap(state), state.S'),
             extra=('\n'
                    '\n'
                    'class Sub(M):\n'
                    '    def update(self, x):\n'
                    '        y = super().scale(x)\n'
                    '        self.S.value = y\n'
                    '        return self.S.value\n'),
             cls='Sub'),
    ),
    Rule(
        'default reset in a step',
        f"{STMT}.default_reset",
        '`self.reset_state()` in a step of a class that defines none',
        "`model.reset_state()` at the top of the user's loss (`--function`), the model relying on BrainPy's default",
        ("`state = self.reset_example(params, state)`: one example reset as BrainPy's default resets the model "
         "(its children and built-ins, `bp.reset_state`'s order)"),
        Case(before=('self.reset_state()\n'
                     'return self.V'),
             after=('state = self.reset_example(params, state)\n'
                    'return bfy.unwrap(state), state.V')),
        Case(before=('self.reset_state()\n'
                     'return self.V'),
             after=('state, _ = self.reset_state_pure(params, state)\n'
                    'return bfy.unwrap(state), state.V'),
             extra=('    def reset_state(self, batch_size=None):\n'
                    '        self.V.value = bm.zeros(3)\n')),
    ),
    Rule(
        'BrainPy base reset',
        f"{STMT}.brainpy_base_reset",
        "a BrainPy base's `reset_state`",
        '`super().reset_state(batch_size)` in `reset_state`, no class of the file above',
        ("dropped: BrainPy's model bases reset nothing there (a group's children are reset by "
         "`bp.reset_state`), and in the batched class `super()` would reach the batch's own `reset_state`"),
        Case(before='return self.V',
             after=('state = state._replace(V=bm.zeros(3))\n'
                    'return bfy.unwrap(state), None'),
             extra=('    def reset_state(self, batch_size=None):\n'
                    '        super().reset_state(batch_size)\n'
                    '        self.V.value = bm.zeros(3)\n'),
             where='body:reset_state_pure'),
        Case(before='return self.V',
             after=('state, _ = super().reset_state_pure(params, state, batch_size)\n'
                    'state = state._replace(S=bm.ones(3))\n'
                    'return bfy.unwrap(state), None'),
             extra=('    def reset_state(self, batch_size=None):\n'
                    '        self.V.value = bm.zeros(3)\n'
                    '\n'
                    '\n'
                    'class Sub(M):\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        super().reset_state(batch_size)\n'
                    '        self.S.value = bm.ones(3)\n'),
             cls='Sub', where='body:reset_state_pure'),
    ),
    Rule(
        'reset level',
        "rewrite.methods.kept_decorator",
        'the order of resets',
        '`@bp.reset_level(1)` on `reset_state`',
        ('kept on `reset_state_pure`: `bp.reset_state`, `reset()` and the harness reset the batch in '
         "BrainPy's order (nodes without a level, then level 0, 1, ...); decorators that do not change "
         'what a stateful method computes (`@bm.cls_jit`, `@bm.jit`, `@jax.jit`, `@jax.checkpoint`) are '
         'dropped, any other is refused (BFY216)'),
        Case(before='return self.V',
             after='@bp.reset_level(1)',
             extra=('    @bp.reset_level(1)\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        self.V.value = bm.zeros(3)\n'),
             where='decorator:reset_state_pure'),
        Case(before='return self.helper2(x)',
             after='',
             extra=('    @bm.cls_jit\n'
                    '    def helper2(self, x):\n'
                    '        self.S.value = x\n'
                    '        return x\n'),
             where='decorator:helper2_pure'),
    ),
    Rule(
        'child call',
        f"{EXPR}.child_call",
        'child models',
        '`self.child(x)`, `self.child.update(x)`',
        ('`child_state, child_out = self.child.update_pure(params.child, state.child, x)` then '
         '`state = state._replace(child=child_state)`'),
        Case(before='return self.child(x)',
             after=('child_state, child_out = self.child.update_pure(params.child, state.child, x)\n'
                    'state = state._replace(child=child_state)\n'
                    'return bfy.unwrap(state), child_out')),
        Case(before='return self.child.u * x + self.V',
             after='return bfy.unwrap(state), state.child.u * x + state.V'),
    ),
    Rule(
        'reader in place',
        f"{EXPR}.reader_in_place",
        'read-only methods where a call cannot be moved',
        '`f = lambda: self.reads(x)` where `reads` only reads state and weights',
        'called in place: `self.reads_pure(params, state, x)[1]`',
        Case(before=('f = lambda: self.reads(x)\n'
                     'return f()'),
             after=('f = lambda: self.reads_pure(params, state, x)[1]\n'
                    'return bfy.unwrap(state), f()'),
             extra=('\n'
                    '    def reads(self, y):\n'
                    '        return self.V * y\n')),
        Case(before=('f = lambda: self.scale(x)\n'
                     'return f() + self.V'),
             after=('f = lambda: self.scale(x)\n'
                    'return bfy.unwrap(state), f() + state.V')),
    ),
    Rule(
        'property read',
        f"{EXPR}.property_read",
        'a `@property` that reads state or weights and changes nothing',
        '`@property def w_eff(self): return self.W * self.mask` (a masked or sign-constrained weight), used as `x @ self.w_eff`',
        ("read in place from its pure twin, `x @ self.w_eff_pure(params, state)[1]` (the traced weights, this "
         "example's state); outside the steps, a property reading weights only is kept as written, one reading "
         "state is `rate = bfy.batched_property(\"rate_pure\")`, each example's value on axis 0 (as written it "
         "would read the whole batch at once), either with its "
         "`@w_eff.setter` / `.deleter` after it (acting on the batch: a state Variable it sets takes the batch's "
         "values; a step assigning `self.w_eff = ...` is refused, BFY202); a property that changes state is "
         "refused (BFY208)"),
        Case(before='return x * self.w_eff',
             after='return bfy.unwrap(state), x * self.w_eff_pure(params, state)[1]',
             extra=('\n'
                    '    @property\n'
                    '    def w_eff(self):\n'
                    '        return self.W * 2.0\n')),
        Case(before='return x * self.twice',
             after='return x * self.twice',
             where='update',
             extra=('\n'
                    '    @property\n'
                    '    def twice(self):\n'
                    '        return self.gain * 2.0\n')),
    ),
    Rule(
        'state properties outside the steps',
        f"{CLASS}.reads_state",
        'a `@property` that reads state, read on the batched model',
        '`@property def bump_position(self): return bm.angle(bm.sum(self.r * bm.exp(1j * self.x)))`',
        ('`bump_position = bfy.batched_property("bump_position_pure")`: each example\'s value, stacked on axis '
         '0 (as written it would read the whole batch at once: one number summed over every example)'),
        Case(before='return self.rate',
             after='rate = bfy.batched_property("rate_pure")',
             where='line:rate',
             extra=('\n'
                    '    @property\n'
                    '    def rate(self):\n'
                    '        return self.V.sum()\n')),
        Case(before='return self.V * self.norm',
             after='@property',
             where='decorator:norm',
             extra=('\n'
                    '    @property\n'
                    '    def norm(self):\n'
                    '        return self.W.sum()\n')),
    ),
    Rule(
        'random draw',
        f"{EXPR}.random_draw",
        'random draws',
        ('`bm.random.normal(0.0, 1.0, n)`; `self.rng.normal(...)` where `self.rng = bm.random.default_rng()` '
         "(BrainPy's global stream, as are `bm.random.DEFAULT` and the module `bm.random` held on an attribute; "
         "seeded, `default_rng(42)` is held like `bm.random.RandomState(42)`); `self.sample(...)` where "
         "`self.sample = bm.random.normal`, a sampler held on an attribute"),
        ('`state, key = bfy.next_key(state)` then `bm.random.normal(0.0, 1.0, n, key=key)`: each '
         "example its own stream, advanced as BrainPy's global key would be; the global stream handed to a "
         "model of the file that draws from it (`Noisy(n, self.rng)`) is BFY206: create it in that class"),
        Case(before='return self.V + bm.random.normal(0.0, 1.0, 3)',
             after=('state, key = bfy.next_key(state)\n'
                    'return bfy.unwrap(state), state.V + bm.random.normal(0.0, 1.0, 3, key=key)')),
        Case(before='return self.V + bm.random.normal(0.0, 1.0, 3, key=x)',
             after='return bfy.unwrap(state), state.V + bm.random.normal(0.0, 1.0, 3, key=x)'),
    ),
    Rule(
        'stochastic integrator',
        f"{EXPR}.noisy_integrator_call",
        'stochastic integrators',
        '`self.integral = bp.sdeint(f, g)`; `V = self.integral(V, t, dt=dt)`',
        ('`state, V = bfy.with_rng(state, self.integral, V, t, dt=dt)`: the noise from this '
         "example's stream"),
        Case(before=('self.V.value = self.integral(self.V, 0.0, 0.1)\n'
                     'return self.V.value'),
             after=('state, drawn = bfy.with_rng(state, self.integral, state.V, 0.0, 0.1)\n'
                    'state = state._replace(V=drawn)\n'
                    'return bfy.unwrap(state), state.V'),
             init='self.integral = bp.sdeint(lambda v, t: -v, lambda v, t: 0.1)'),
        Case(before=('self.V.value = self.integral(self.V, 0.0, 0.1)\n'
                     'return self.V.value'),
             after=('state = state._replace(V=self.integral(state.V, 0.0, 0.1))\n'
                    'return bfy.unwrap(state), state.V'),
             init='self.integral = bp.odeint(lambda v, t: -v)'),
    ),
    Rule(
        'initial value',
        f"{EXPR}.state_factory",
        '`bp.init.variable_` (or `self.init_variable`) outside `__init__`',
        ('`self.h = bp.init.variable_(bm.zeros, 3, batch_size)` in `reset_state`; '
         '`self.V = self.init_variable(self._V_initializer, batch_size)`'),
        ("the value of the Variable the original creates, `bfy.initial_value(bm.zeros, 3, batch_size)` "
         "(a batch axis that a batch size or batching mode adds belongs to the example, as in the original: "
         "`(B, 1, n)` for `(1, n)`); `self.init_variable(init, batch_size)` is "
         "`bfy.initial_value(init, sizes=self.varshape, batch_or_mode=batch_size)`, BrainPy's own default shape; "
         "a random initializer draws through `bfy.with_rng` from this example's stream"),
        Case(before='return self.V',
             after=('state = state._replace(V=bfy.initial_value(bm.zeros, 3, batch_size))\n'
                    'return bfy.unwrap(state), None'),
             where='reset_state_pure',
             extra=('\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        self.V.value = bp.init.variable_(bm.zeros, 3, batch_size)\n')),
        Case(before='return self.V',
             after=('state = state._replace(V=bm.zeros(3))\n'
                    'return bfy.unwrap(state), None'),
             where='reset_state_pure',
             extra=('\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        self.V.value = bm.zeros(3)\n')),
    ),
    Rule(
        'Variable re-created',
        f"{EXPR}.variable_recreated",
        'a Variable made again in `reset_state`',
        '`self.V = bm.Variable(bm.zeros(3))`',
        'its value: `state._replace(V=bm.Variable(bm.zeros(3)).value)`',
        Case(before='return self.V',
             after=('state = state._replace(V=bm.Variable(bm.zeros(3)).value)\n'
                    'return bfy.unwrap(state), None'),
             where='reset_state_pure',
             extra=('\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        self.V = bm.Variable(bm.zeros(3))\n')),
        Case(before='return self.V',
             after=('state = state._replace(V=bm.zeros(3))\n'
                    'return bfy.unwrap(state), None'),
             where='reset_state_pure',
             extra=('\n'
                    '    def reset_state(self, batch_size=None):\n'
                    '        self.V.value = bm.zeros(3)\n')),
    ),
    Rule(
        'control flow carrying the state',
        f"{EXPR}.control_flow_call",
        'closures that change state in BrainPy control flow',
        ('`bm.for_loop(body, xs)`, `bm.cond(p, f, g)`, `bm.while_loop(body, cond, x)`, '
         '`bm.ifelse(conds, branches)`'),
        ('the closure takes and returns the state (`def body(state, x) -> (state, y)`): '
         '`bfy.for_loop` over `jax.lax.scan`, `bfy.cond` over `jax.lax.cond`, `bfy.while_loop`, '
         '`bfy.ifelse` over `jax.lax.switch`; bodies that change nothing are wrapped in '
         '`bfy.stateless`'),
        Case(before=('def body(i):\n'
                     '    self.V += x\n'
                     '    return self.V.value\n'
                     'return bm.for_loop(body, bm.arange(3))'),
             after=('def body(state, i):\n'
                    '    state = state._replace(V=state.V + x)\n'
                    '    return bfy.unwrap(state), state.V\n'
                    'state, loop_out = bfy.for_loop(body, state, bm.arange(3))\n'
                    'return bfy.unwrap(state), loop_out')),
        Case(before=('ys = bm.for_loop(lambda i: i * 2.0, bm.arange(3.0))\n'
                     'return self.V + ys.sum()'),
             after=('ys = bm.for_loop(lambda i: i * 2.0, bm.arange(3.0))\n'
                    'return bfy.unwrap(state), state.V + ys.sum()')),
    ),
    Rule(
        'lambda body',
        f"{EXPR}.carried_lambda",
        'a lambda over a stateful call as such a body',
        '`bm.for_loop(lambda i: self.step(i, x), xs)`, `lambda i: step_run(i, x_single)` in a `--function`',
        '`bfy.for_loop(lambda state, i: self.step_pure(params, state, i, x), state, xs)`',
        Case(before='return bm.for_loop(lambda i: self.step(i, x), bm.arange(3))',
             after=('state, loop_out = bfy.for_loop(lambda state, i: self.step_pure(params, state, i, x), state, '
                    'bm.arange(3))\n'
                    'return bfy.unwrap(state), loop_out'),
             extra=('\n'
                    '    def step(self, i, y):\n'
                    '        self.V.value = self.V * 0.9 + y\n'
                    '        return self.V.value\n')),
        Case(before=('ys = bm.for_loop(lambda i: self.scale(i), bm.arange(3.0))\n'
                     'return self.V + ys.sum()'),
             after=('ys = bm.for_loop(lambda i: self.scale(i), bm.arange(3.0))\n'
                    'return bfy.unwrap(state), state.V + ys.sum()')),
    ),
    Rule(
        'partial body',
        f"{EXPR}.carried_partial",
        '`functools.partial` of such a body',
        '`bm.for_loop(functools.partial(self.step, y=x), xs)`, `functools.partial(body, y=x)`',
        ('`bfy.for_loop(lambda state, *args: self.step_pure(params, state, *args, y=x), state, xs)`: the '
         'bound arguments read as any argument is'),
        Case(before=('import functools\n'
                     'return bm.for_loop(functools.partial(self.step, y=x), bm.arange(3))'),
             after=('import functools\n'
                    'state, loop_out = bfy.for_loop(lambda state, *args: self.step_pure(params, state, *args, '
                    'y=x), state, bm.arange(3))\n'
                    'return bfy.unwrap(state), loop_out'),
             extra=('\n'
                    '    def step(self, i, y):\n'
                    '        self.V.value = self.V * 0.9 + y\n'
                    '        return self.V.value\n')),
        Case(before=('import functools\n'
                     'ys = bm.for_loop(functools.partial(self.scale), bm.arange(3.0))\n'
                     'return self.V + ys.sum()'),
             after=('import functools\n'
                    'ys = bm.for_loop(functools.partial(self.scale), bm.arange(3.0))\n'
                    'return bfy.unwrap(state), state.V + ys.sum()')),
    ),
    Rule(
        'loop body call',
        f"{EXPR}.loop_body_call",
        'a direct call of such a closure',
        '`body(0)` next to `bm.for_loop(body, xs)`',
        '`state, body_out = body(state, 0)`',
        Case(before=('def body(i):\n'
                     '    self.V += x\n'
                     '    return self.V.value\n'
                     'first = body(0)\n'
                     'return first + bm.for_loop(body, bm.arange(3))'),
             after=('def body(state, i):\n'
                    '    state = state._replace(V=state.V + x)\n'
                    '    return bfy.unwrap(state), state.V\n'
                    'state, first = body(state, 0)\n'
                    'state, loop_out = bfy.for_loop(body, state, bm.arange(3))\n'
                    'return bfy.unwrap(state), first + loop_out')),
        Case(before=('def twice(i):\n'
                     '    return i * 2.0\n'
                     'return self.V + twice(1.0)'),
             after=('def twice(i):\n'
                    '    return i * 2.0\n'
                    'return bfy.unwrap(state), state.V + twice(1.0)')),
    ),
    Rule(
        'unbatchable random',
        f"{EXPR}.refuse_unbatchable_random",
        "NumPy's random numbers in a step",
        '`np.random.normal(...)`',
        'refused (BFY206): it would draw once, when the step is traced',
        Case(before=('import numpy as np\n'
                     'return self.V + np.random.normal()'),
             after='BFY206 numpy.random.normal'),
        Case(before=('import numpy as np\n'
                     'return self.V + np.sqrt(2.0)'),
             after=('import numpy as np\n'
                    'return bfy.unwrap(state), state.V + np.sqrt(2.0)')),
    ),
    Rule(
        'return',
        f"{STMT}.return_",
        'returns',
        '`return a, b`, dicts, `None`, no `return`',
        '`return bfy.unwrap(state), (a, b)`: the new state (plain jax arrays) and the result',
        Case(before=('self.V.value = x\n'
                     "return self.V, {'s': self.S}"),
             after=('state = state._replace(V=x)\n'
                    "return bfy.unwrap(state), (state.V, {'s': state.S})")),
        Case(before='return self.gain, x',
             after='return self.gain, x',
             where='update'),
    ),
    Rule(
        'state write',
        f"{STMT}.assign",
        'writes',
        '`self.V.value = e`, `self.V = e`, `self.child.u = e`',
        '`state = state._replace(V=e)`',
        Case(before=('self.V.value = x\n'
                     'self.S = x * 2\n'
                     'self.child.u = x'),
             after=('state = state._replace(V=x)\n'
                    'state = state._replace(S=x * 2)\n'
                    'state = state._replace(child=state.child._replace(u=x))\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('y = x * 2\n'
                     'self.V.value = y'),
             after=('y = x * 2\n'
                    'state = state._replace(V=y)\n'
                    'return bfy.unwrap(state), None'),
             where='update_pure'),
    ),
    Rule(
        'augmented write',
        f"{STMT}.aug_assign",
        'augmented writes',
        ('`self.V += e` (every operator), `self.child.u -= e`; `r *= g` on a local the state holds too '
         '(`self.r.value = r` or `r = self.r.value` before it)'),
        ('`state._replace(V=state.V + e)` (a lower-precedence operand is parenthesised); `r = r * g`: `bm` '
         'functions return BrainPy Arrays, which `*=` would change in place, state included, where the '
         'original\'s Variable holds its own copy'),
        Case(before=('self.V -= x - 1\n'
                     'self.child.u *= 2.0\n'
                     'r = bm.tanh(x)\n'
                     'self.S.value = r\n'
                     'r *= 2.0'),
             after=('state = state._replace(V=state.V - (x - 1))\n'
                    'state = state._replace(child=state.child._replace(u=state.child.u * 2.0))\n'
                    'r = bm.tanh(x)\n'
                    'state = state._replace(S=r)\n'
                    'r = r * 2.0\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('y = x\n'
                     'y += 1.0\n'
                     'self.V.value = y'),
             after=('y = x\n'
                    'y += 1.0\n'
                    'state = state._replace(V=y)\n'
                    'return bfy.unwrap(state), None')),
    ),
    Rule(
        'indexed write',
        f"{STMT}.indexed_write",
        'indexed writes',
        '`self.V[i] = e`, `self.V[i] += e`',
        ('`state.V.at[i].set(e)`, `state.V.at[i].set(state.V[i] + e)` (no accumulation of '
         'duplicate indices, as in the original)'),
        Case(before=('self.V[0] = x[1]\n'
                     'self.S[1:] += x[1:]'),
             after=('state = state._replace(V=state.V.at[0].set(x[1]))\n'
                    'state = state._replace(S=state.S.at[1:].set(state.S[1:] + x[1:]))\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('y = x + 0.0\n'
                     'y = y.at[0].set(1.0)\n'
                     'self.V.value = y'),
             after=('y = x + 0.0\n'
                    'y = y.at[0].set(1.0)\n'
                    'state = state._replace(V=y)\n'
                    'return bfy.unwrap(state), None')),
    ),
    Rule(
        'index read first',
        f"{STMT}.indices_first",
        "an augmented target's index that reads the model, with a call in the value",
        '`self.V[bm.argmax(self.S)] += self.helper(x)`, `y[self.N.V.value > 0] += self.N(x)`',
        ('the index in a name of its own in front of the call, `index = bm.argmax(state.S)`: Python evaluates '
         'the target\'s index before the value, and the call moves in front of the statement'),
        Case(before='self.V[bm.argmax(self.S)] += self.helper(x)[0]',
             after=('index = bm.argmax(state.S)\n'
                    'state, helper_out = self.helper_pure(params, state, x)\n'
                    'state = state._replace(V=state.V.at[index].set(state.V[index] + helper_out[0]))\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('i = 0\n'
                     'self.V[i] += self.helper(x)[0]'),
             after=('i = 0\n'
                    'state, helper_out = self.helper_pure(params, state, x)\n'
                    'state = state._replace(V=state.V.at[i].set(state.V[i] + helper_out[0]))\n'
                    'return bfy.unwrap(state), None')),
    ),
    Rule(
        'masked write',
        f"{STMT}.indexed_write",
        'writes through a boolean mask',
        ('`self.V[self.V > th] = 0.`, `self.V[m] = self.R[m]`, `self.S[(self.V < a) & ~r] += 2.`; a local '
         'every binding of which is a mask, `spike = self.V >= th` then `self.V[spike] = 0.`'),
        ('`state.V = jnp.where(state.V > th, 0., state.V)` (`x[m]` as the value: `x`), `jnp.where(m, state.S + 2., '
         'state.S)`: a mask selects a number of elements no trace can know (`.at[mask]` raises '
         '`NonConcreteBooleanIndexError` under `vmap` and `jit`)'),
        Case(before=('self.V.value = self.V + x\n'
                     'self.V[self.V > 1.] = self.S[self.V > 1.]\n'
                     'spike = self.S > 0.\n'
                     'quiet = ~spike\n'
                     'self.S[quiet] = 0.'),
             after=('state = state._replace(V=state.V + x)\n'
                    'state = state._replace(V=jnp.where(state.V > 1., state.S, state.V))\n'
                    'spike = state.S > 0.\n'
                    'quiet = ~spike\n'
                    'state = state._replace(S=jnp.where(quiet, 0., state.S))\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('self.V.value = self.V + x\n'
                     'i = x > 0.\n'
                     'i, j = 0, 1\n'
                     'self.V[self.S] = 0.\n'
                     'self.V[i] = 1.'),
             after=('state = state._replace(V=state.V + x)\n'
                    'i = x > 0.\n'
                    'i, j = 0, 1\n'
                    'state = state._replace(V=state.V.at[state.S].set(0.))\n'
                    'state = state._replace(V=state.V.at[i].set(1.))\n'
                    'return bfy.unwrap(state), None')),
    ),
    Rule(
        'item write',
        f"{STMT}.container_item_write",
        'writes of a `bm.VarList` / `bm.VarDict` item',
        ('`self.traces[i] = e`, `self.traces[i].value = e`, `self.stats["peak"] = e`; elements of an item, '
         '`self.traces[i][j] += e`'),
        ('`state._replace(traces=bfy.replace_item(state.traces, i, e))`; the item\'s elements as an '
         'indexed write, `bfy.replace_item(state.traces, i, state.traces[i].at[j].set(state.traces[i][j] + e))`'),
        Case(before=('self.traces[0] = x\n'
                     'self.traces[1].value += x\n'
                     'self.traces[1][0] = 2.'),
             after=('state = state._replace(traces=bfy.replace_item(state.traces, 0, x))\n'
                    'state = state._replace(traces=bfy.replace_item(state.traces, 1, state.traces[1] + x))\n'
                    'state = state._replace(traces=bfy.replace_item(state.traces, 1, state.traces[1].at[0].set(2.)))\n'
                    'return bfy.unwrap(state), None'),
             init='self.traces = bm.VarList([bm.Variable(bm.zeros(3)), bm.Variable(bm.zeros(3))])'),
        Case(before=('items = [x, x]\n'
                     'items[0] = self.V\n'
                     'return items'),
             after=('items = [x, x]\n'
                    'items[0] = state.V\n'
                    'return bfy.unwrap(state), items')),
    ),
    Rule(
        'unpacking',
        f"{STMT}.unpacking",
        'unpacking and chained writes',
        '`self.a.value, self.b.value = f(x)`, `self.V.value = self.S.value = x`',
        "temporaries, then one `_replace` each, in the original's order",
        Case(before='self.V.value, self.S.value = x, -x',
             after=('new_V, new_S = x, -x\n'
                    'state = state._replace(V=new_V)\n'
                    'state = state._replace(S=new_S)\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('a, b = x, -x\n'
                     'self.V.value = a + b'),
             after=('a, b = x, -x\n'
                    'state = state._replace(V=a + b)\n'
                    'return bfy.unwrap(state), None')),
    ),
    Rule(
        'update method',
        f"{STMT}.variable_update",
        '`update` of a Variable',
        '`self.V.update(e)`',
        '`state = state._replace(V=e)`',
        Case(before='self.V.update(x)',
             after=('state = state._replace(V=x)\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('self.child.update(x)\n'
                     'return self.V'),
             after=('child_state, _ = self.child.update_pure(params.child, state.child, x)\n'
                    'state = state._replace(child=child_state)\n'
                    'return bfy.unwrap(state), state.V')),
    ),
    Rule(
        'built-in write',
        f"{STMT}.library_write",
        "writes of a built-in's Variables",
        '`self.N.V += 0.1 * x`, `self.N.input[:] = 0`',
        '`state = self.library.write(state, "N.V", ...)`',
        Case(before=('self.N.V += 0.1 * x\n'
                     'return self.V'),
             after=('state = self.library.write(state, "N.V", self.library.read(params, state, "N.V") + 0.1 * x)\n'
                    'return bfy.unwrap(state), state.V'),
             init='self.N = bp.dyn.Lif(3)'),
        Case(before=('self.V += 0.1 * x\n'
                     'return self.V'),
             after=('state = state._replace(V=state.V + 0.1 * x)\n'
                    'return bfy.unwrap(state), state.V'),
             init='self.N = bp.dyn.Lif(3)'),
    ),
    Rule(
        'Python if',
        f"{STMT}.if_",
        'Python `if` on configuration',
        '`if self.adaptive:`, `if x is None:`, on shapes (`self.V.shape[0]`)',
        ("kept, every branch threading the state (on a Variable's value, `if self.V.sum() > 0:`, "
         'refused with BFY210 at that line)'),
        Case(before=('if self.gain > 1.0:\n'
                     '    self.V.value = x\n'
                     'else:\n'
                     '    self.S.value = x'),
             after=('if self.gain > 1.0:\n'
                    '    state = state._replace(V=x)\n'
                    'else:\n'
                    '    state = state._replace(S=x)\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('if self.gain > 1.0:\n'
                     '    return x\n'
                     'return 2 * x'),
             after=('if self.gain > 1.0:\n'
                    '    return x\n'
                    'return 2 * x'),
             where='update'),
    ),
    Rule(
        'Python for',
        f"{STMT}.for_",
        'Python `for`',
        '`for i in range(self.n_steps):`, `for t in self.traces:`',
        'kept (unrolled when traced, as in the original), the body threading the state',
        Case(before=('for i in range(2):\n'
                     '    self.V += x'),
             after=('for i in range(2):\n'
                    '    state = state._replace(V=state.V + x)\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('total = 0.0\n'
                     'for i in range(2):\n'
                     '    total += i\n'
                     'return total'),
             after=('total = 0.0\n'
                    'for i in range(2):\n'
                    '    total += i\n'
                    'return total'),
             where='update'),
    ),
    Rule(
        'Python while',
        f"{STMT}.while_",
        'Python `while` on configuration',
        '`while k < self.n_iter:`',
        'kept, the body threading the state',
        Case(before=('k = 0\n'
                     'while k < 2:\n'
                     '    self.V += x\n'
                     '    k += 1'),
             after=('k = 0\n'
                    'while k < 2:\n'
                    '    state = state._replace(V=state.V + x)\n'
                    '    k += 1\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('k = 0\n'
                     'while k < 2:\n'
                     '    k += 1\n'
                     'return k'),
             after=('k = 0\n'
                    'while k < 2:\n'
                    '    k += 1\n'
                    'return k'),
             where='update'),
    ),
    Rule(
        'Python match',
        f"{STMT}.match_",
        'Python `match` on configuration',
        '`match self.kind: case "tanh": ...`',
        'kept, each case threading the state',
        Case(before=('match self.kind:\n'
                     "    case 'tanh':\n"
                     '        self.V.value = bm.tanh(x)\n'
                     '    case _:\n'
                     '        self.V.value = x'),
             after=('match self.kind:\n'
                    "    case 'tanh':\n"
                    '        state = state._replace(V=bm.tanh(x))\n'
                    '    case _:\n'
                    '        state = state._replace(V=x)\n'
                    'return bfy.unwrap(state), None'),
             init="self.kind = 'tanh'"),
        Case(before=('match self.kind:\n'
                     "    case 'tanh':\n"
                     '        return bm.tanh(x)\n'
                     'return x'),
             after=('match self.kind:\n'
                    "    case 'tanh':\n"
                    '        return bm.tanh(x)\n'
                    'return x'),
             init="self.kind = 'tanh'",
             where='update'),
    ),
    Rule(
        'with',
        f"{STMT}.with_",
        '`with` blocks',
        '`with bm.environment(dt=0.1):`',
        'kept, the body threading the state',
        Case(before=('with bm.environment(dt=0.1):\n'
                     '    self.V += x'),
             after=('with bm.environment(dt=0.1):\n'
                    '    state = state._replace(V=state.V + x)\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('with bm.environment(dt=0.1):\n'
                     '    y = x * 2\n'
                     'return y'),
             after=('with bm.environment(dt=0.1):\n'
                    '    y = x * 2\n'
                    'return y'),
             where='update'),
    ),
    Rule(
        'try',
        f"{STMT}.try_",
        '`try` blocks',
        '`try: ... except ValueError: ... finally: ...`',
        ('kept, every block threading the state; a `finally` block that writes state after a `return` in its '
         '`try` is refused (BFY205: the returned state is built before the `finally` block runs)'),
        Case(before=('try:\n'
                     '    self.V += x\n'
                     'except ValueError:\n'
                     '    self.S += x\n'
                     'finally:\n'
                     '    self.S.value = self.S * 0.5'),
             after=('try:\n'
                    '    state = state._replace(V=state.V + x)\n'
                    'except ValueError:\n'
                    '    state = state._replace(S=state.S + x)\n'
                    'finally:\n'
                    '    state = state._replace(S=state.S * 0.5)\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('try:\n'
                     '    y = x * 2\n'
                     'except ValueError:\n'
                     '    y = x\n'
                     'return y'),
             after=('try:\n'
                    '    y = x * 2\n'
                    'except ValueError:\n'
                    '    y = x\n'
                    'return y'),
             where='update'),
    ),
    Rule(
        'nested function',
        f"{STMT}.nested",
        'nested functions and classes',
        '`def f(y): return y * self.V`',
        ('reads rewritten (`state.V`); a write inside is refused (BFY203), except in closures '
         "given to BrainPy's control flow"),
        Case(before=('def f(y):\n'
                     '    return y * self.V\n'
                     'return f(x)'),
             after=('def f(y):\n'
                    '    return y * state.V\n'
                    'return bfy.unwrap(state), f(x)')),
        Case(before=('def f(y):\n'
                     '    return y * 2.0\n'
                     'return f(x) + self.V'),
             after=('def f(y):\n'
                    '    return y * 2.0\n'
                    'return bfy.unwrap(state), f(x) + state.V')),
    ),
    Rule(
        'annotated write',
        f"{STMT}.annotated_assign",
        'annotated writes',
        '`self.V: jax.Array = e`',
        'a write like the plain assignment',
        Case(before='self.V: object = x',
             after=('state = state._replace(V=x)\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('y: object = x\n'
                     'self.V.value = y'),
             after=('y: object = x\n'
                    'state = state._replace(V=y)\n'
                    'return bfy.unwrap(state), None')),
    ),
    Rule(
        'expression statement',
        f"{STMT}.expression",
        'a stateful call as a statement',
        '`self.helper(x)`',
        '`state, _ = self.helper_pure(params, state, x)`',
        Case(before='self.helper(x)',
             after=('state, _ = self.helper_pure(params, state, x)\n'
                    'return bfy.unwrap(state), None')),
        Case(before=('self.scale(x)\n'
                     'return self.V'),
             after=('self.scale(x)\n'
                    'return bfy.unwrap(state), state.V')),
    ),
    Rule(
        'alias',
        'aliases._Inline.leave_Name',
        'a Variable under another name',
        ('`v = self.V` (bound once, at the top of the method) then `v += e`, `return v * 1.0`; `a, '
         'b = self.A, self.B`'),
        ("every use of the alias is the Variable itself (`state.V`, `params.W`), as the original's "
         'Variable object behaves; a name a nested function, lambda or comprehension binds for itself '
         '(`def decay(v): V = v * 0.9`, `[V * 2 for V in xs]`) is its own, not the alias'),
        Case(before=('v = self.V\n'
                     'v += x\n'
                     'return v * 1.0'),
             after=('state = state._replace(V=state.V + x)\n'
                    'return bfy.unwrap(state), state.V * 1.0')),
        Case(before=('v = self.gain\n'
                     'v += 1.0\n'
                     'return self.V * v'),
             after=('v = self.gain\n'
                    'v += 1.0\n'
                    'return bfy.unwrap(state), state.V * v')),
    ),
    Rule(
        'models walked by a loop',
        'aliases._Unroll.leave_For',
        "a loop over the class's models",
        ('`for proj in (self.E2E, self.I2E): proj()`; `self.pops = [self.E, self.I]` in `__init__`, then '
         '`for p in self.pops: p(x)`, `sum(p(x) for p in self.pops)`, `self.pops[-1]`'),
        ('the body once per model, the loop name replaced by it (`self.E2E()`, then rewritten as a child '
         'call); a comprehension is a list or tuple of one item per model, a constant index that model; '
         'not where the loop name is read after the loop, by a function in the body, or the body has '
         '`break`, `continue` or `else`, nor a list of models changed after `__init__` (BFY213)'),
        Case(before=('for kid in self.kids:\n'
                     '    x = kid(x)\n'
                     'return x'),
             after=('child_state, x = self.child.update_pure(params.child, state.child, x)\n'
                    'state = state._replace(child=child_state)\n'
                    'other_state, x = self.other.update_pure(params.other, state.other, x)\n'
                    'state = state._replace(other=other_state)\n'
                    'return bfy.unwrap(state), x'),
             init=('self.other = Child()\n'
                   'self.kids = [self.child, self.other]')),
        Case(before=('for g in self.gains:\n'
                     '    x = x * g\n'
                     'return self.V + x'),
             after=('for g in self.gains:\n'
                    '    x = x * g\n'
                    'return bfy.unwrap(state), state.V + x'),
             init='self.gains = [1.0, 2.0]'),
    ),
    Rule(
        'getattr and setattr',
        'aliases._Inline.leave_Call',
        '`getattr` / `setattr` with a constant name',
        '`getattr(self, "V").value = e`, `setattr(self, "S", e)`',
        '`self.V.value = e`, `self.S = e`, then rewritten as those',
        Case(before=("setattr(self, 'S', x)\n"
                     "return getattr(self, 'V').value"),
             after=('state = state._replace(S=x)\n'
                    'return bfy.unwrap(state), state.V')),
        Case(before="return getattr(self, 'gain') * x",
             after='return self.gain * x',
             where='update'),
    ),
    Rule(
        'in-place methods',
        'aliases._Inline.leave_SimpleStatementLine',
        'in-place methods',
        '`self.V.fill(0.5)`, `self.V.fill_(0.5)`, `self.V.zero_()`',
        '`state._replace(V=jnp.full_like(state.V, 0.5))`, `jnp.zeros_like`',
        Case(before=('self.V.fill_(0.5)\n'
                     'self.S.zero_()'),
             after=('state = state._replace(V=jnp.full_like(state.V, 0.5))\n'
                    'state = state._replace(S=jnp.zeros_like(state.S))\n'
                    'return bfy.unwrap(state), None')),
        Case(before='self.V.value = bm.ones_like(self.V) * 0.5',
             after=('state = state._replace(V=bm.ones_like(state.V) * 0.5)\n'
                    'return bfy.unwrap(state), None')),
    ),
    Rule(
        'import aliases',
        'analyse.Analysis.qualified_names',
        'any import alias',
        ('`import brainpy.math as bm`, `from brainpy.math import Variable, TrainVar`, '
         '`bp.math.Variable`'),
        "resolved as LibCST's `QualifiedNameProvider` resolves them: the same Variables",
        Case(before='return self.Q',
             after='self.Q = bfy.batched(bp.math.Variable(bm.zeros(2)), batch_size)',
             init='self.Q = bp.math.Variable(bm.zeros(2))',
             where='__init__'),
        Case(before='return self.V',
             after='self.Q = Variable(2)',
             init='self.Q = Variable(2)',
             where='__init__',
             extra=('\n'
                    '\n'
                    'class Variable:\n'
                    '    def __init__(self, n):\n'
                    '        self.n = n\n')),
    ),
    Rule(
        'integrators read one example',
        'rewrite.methods.with_example_for_holders',
        'derivatives that read state, handed to an integrator',
        ('`self.integral = bp.odeint(self.dV)` with `dV` reading `self.S`; a derivative property handing out '
         'such methods (`@property def derivative(self): return bp.JointEq(self.dV, self.dw)`)'),
        ('the integrator runs `with bfy.one_example(self, params, state):` inside the pure step, '
         "so the derivatives read that example's state; `from_model` rebuilds the integrator "
         "around the batch's derivatives, with the model's integrator's own `dt` (not BrainPy's global one, "
         "which a run changes), a `method=method` from `__init__`'s arguments as "
         "`method=bfy.integrator_method(self.integral)` (refused, BFY208, when it is built from other "
         "names of `__init__` or the derivative writes state)"),
        Case(before=('self.V.value = self.integral(self.V, 0.0)\n'
                     'return self.V.value'),
             after=('with bfy.one_example(self, params, state):\n'
                    '    state = state._replace(V=self.integral(state.V, 0.0))\n'
                    'return bfy.unwrap(state), state.V'),
             init='self.integral = bp.odeint(self.dV)',
             extra=('\n'
                    '    def dV(self, v, t):\n'
                    '        return -v + self.S\n')),
        Case(before=('self.V.value = self.integral(self.V, 0.0)\n'
                     'return self.V.value'),
             after=('state = state._replace(V=self.integral(state.V, 0.0))\n'
                    'return bfy.unwrap(state), state.V'),
             init='self.integral = bp.odeint(self.dV)',
             extra=('\n'
                    '    def dV(self, v, t):\n'
                    '        return -v * self.gain\n')),
    ),
    Rule(
        'functions stored on self',
        'rewrite.methods.with_example_for_holders',
        'a function stored on `self` in `__init__` that reads its fields',
        '`self._map_input = lambda x: self.w_in * x + self.b_in` (under an `if`, one lambda or another)',
        ('copied as written; a statement of a pure step calling it runs `with bfy.example_values(self, params, '
         "state):`, where the fields read that example's values (the weights traced, for gradients); "
         '`from_model` rebinds the lambda it copies to the batch (refused, BFY212, when it reaches a child, '
         'a built-in or a method)'),
        Case(before=('y = self.f(x)\n'
                     'return y'),
             after=('with bfy.example_values(self, params, state):\n'
                    '    y = self.f(x)\n'
                    'return bfy.unwrap(state), y'),
             init='self.f = lambda v: v @ self.W + self.V'),
        Case(before=('self.V.value = self.f(x)\n'
                     'return self.V.value'),
             after=('state = state._replace(V=self.f(x))\n'
                    'return bfy.unwrap(state), state.V'),
             init='self.f = lambda v: v * self.gain'),
    ),
    Rule(
        'derivative properties',
        'rewrite.methods.rewrite_context_property',
        'a property returning derivatives that read state',
        '`bp.odeint(f=self.derivative)` of a property returning lambdas that read `self.S`',
        ('the same property, its reads from the example the integrator runs for: '
         '`self._example.state.S`'),
        Case(before=('self.V.value = self.integral(self.V, 0.0)\n'
                     'return self.V.value'),
             after='return lambda v, t: -v + self._example.state.S',
             init='self.integral = bp.odeint(f=self.derivative)',
             where='derivative',
             extra=('\n'
                    '    @property\n'
                    '    def derivative(self):\n'
                    '        return lambda v, t: -v + self.S\n')),
        Case(before=('self.V.value = self.integral(self.V, 0.0)\n'
                     'return self.V.value'),
             after='return lambda v, t: -v * self.gain',
             init='self.integral = bp.odeint(f=self.derivative)',
             where='derivative',
             extra=('\n'
                    '    @property\n'
                    '    def derivative(self):\n'
                    '        return lambda v, t: -v * self.gain\n')),
    ),
    Rule(
        'learned online',
        'analyse.check_learned_online',
        'Variables learned online',
        '`self.w_out += lr * bm.outer(self.h, err)` in `learn()`',
        ("BFY211 until declared; `--shared w_out=mean` or `=sum`: one copy, kept out of `vmap`'s "
         "batch (`state_axes()`), the batch's updates applied by `reduced()`; `=example`: one per "
         'example'),
        Case(before=('self.V.value = x @ self.R\n'
                     'return self.V.value'),
             after=('class MBatched(bfy.Batched, bp.DynamicalSystem, params=MParams, state=MState, shared={"R": "mean"}):'),
             init='self.R = bm.Variable(bm.eye(3))',
             where='header',
             extra=('\n'
                    '    def learn(self, err):\n'
                    '        self.R += 0.1 * bm.outer(self.V, err)\n'),
             shared=('R=mean',)),
        Case(before=('self.V.value = x @ self.W\n'
                     'return self.V.value'),
             after='class MBatched(bfy.Batched, bp.DynamicalSystem, params=MParams, state=MState):',
             where='header',
             extra=('\n'
                    '    def learn(self, err):\n'
                    '        self.V += 0.1 * err\n')),
    ),
    Rule(
        'group of built-ins',
        'rewrite.classes.ClassRewriter.group_of_builtins',
        'a group of built-ins with no `update` of its own',
        '`class Net(bp.DynSysGroup)` whose `__init__` builds neurons and projections',
        ("`update_pure` runs BrainPy's own group update on one example: `self.library.call(params, "
         'state, super().update, *args)`'),
        Case(before='return self.V',
             after=('"""One example of BrainPy\'s own group update (projections, then dynamics, then the rest)."""\n'
                    'return self.library.call(params, state, super().update, *args)'),
             where='update_pure',
             extra=('\n'
                    '\n'
                    'class Net(bp.DynSysGroup):\n'
                    '    def __init__(self):\n'
                    '        super().__init__()\n'
                    '        self.N = bp.dyn.Lif(3)\n'
                    '        self.syn = bp.dyn.Expon(3)\n'),
             cls='Net'),
        Case(before='return self.V',
             after=('state, N_out = self.library.call(params, state, self.N, x)\n'
                    'return bfy.unwrap(state), N_out'),
             where='update_pure',
             extra=('\n'
                    '\n'
                    'class Net(bp.DynSysGroup):\n'
                    '    def __init__(self):\n'
                    '        super().__init__()\n'
                    '        self.N = bp.dyn.Lif(3)\n'
                    '        self.syn = bp.dyn.Expon(3)\n'
                    '\n'
                    '    def update(self, x):\n'
                    '        return self.N(x)\n'),
             cls='Net'),
    ),
    Rule(
        'unused star arguments',
        'rewrite.methods.drop_unused_star_params',
        'an unused `*args` / `**kwargs`',
        '`def step(self, x, *args, **kwargs)` that reads neither',
        'the pure method takes no such arguments',
        Case(before='return self.step(x)',
             after='def step_pure(self, params, state, x):',
             where='def:step_pure',
             extra=('\n'
                    '    def step(self, x, *args, **kwargs):\n'
                    '        self.V.value = x\n'
                    '        return x\n')),
        Case(before='return self.step(x)',
             after='def step_pure(self, params, state, x, *args):',
             where='def:step_pure',
             extra=('\n'
                    '    def step(self, x, *args):\n'
                    '        self.V.value = x + sum(args)\n'
                    '        return x\n')),
    ),
    Rule(
        "the user's own functions",
        "drivers.driver_methods",
        "module-level functions that drive a model instance (`--function loss`)",
        ("`model = M()` at module level, then `def loss(x): y = model.update(x); return (y ** 2).sum(), y` "
         "(and the functions of the file it calls that drive `model`)"),
        ("a method of the instance's class with the instance as `self`, rewritten by the same rules: "
         "`loss_pure(self, params, state, x)`, `loss = bfy.batched_method(\"loss_pure\")` and "
         "`loss_grad = bfy.batched_grad(\"loss_pure\", has_aux=True)`; a function that drives no model "
         "is copied unchanged"),
        Case(before='return self.V',
             after=('state, y = self.update_pure(params, state, x)\n'
                    'return bfy.unwrap(state), ((y ** 2).sum(), y)'),
             where='loss_pure',
             extra=('\n'
                    '\n'
                    'model = M()\n'
                    '\n'
                    '\n'
                    'def loss(x):\n'
                    '    y = model.update(x)\n'
                    '    return (y ** 2).sum(), y\n'),
             functions=('loss',)),
        Case(before='return self.V',
             after=('def norm(x):\n'
                    '    return (x ** 2).sum()'),
             where='copied:norm',
             extra=('\n'
                    '\n'
                    'def norm(x):\n'
                    '    return (x ** 2).sum()\n'),
             functions=('norm',)),
    ),
)
