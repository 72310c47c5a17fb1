"""The BrainPy names batchify recognises, by fully qualified name.

Import aliases (``import brainpy.math as bm``, ``from brainpy.math import Variable``,
``bp.math.Variable``) are resolved by LibCST's QualifiedNameProvider before these
tables are consulted, so each entry is written once, in its canonical spelling.
"""

from __future__ import annotations

import sys

# What a generated module binds ``batchify.runtime`` to: ``from batchify import runtime as bfy``.
RUNTIME = "bfy"
# The runtime contract generated modules are written against (``batchify.runtime.CONTRACT``).
RUNTIME_CONTRACT = 6  # 2: ``example_mode`` (``self.mode`` in pure methods); 3: ``first_output``, ``class_scores``;
# 4: ``integrator_method``; 5: ``example_values`` and ``bound=`` (functions stored on self), ``batched_property``;
# 6: ``unviewed`` (``is`` and ``id()`` of a built-in)

# What generated code may call of the runtime (``bfy.NAME``); validate refuses any other name, and
# tests/test_runtime.py checks that the runtime has each.
RUNTIME_API = frozenset({
    "Batched", "BuiltinBatched", "Harness", "batched_method", "batched", "unwrap", "key_variable",
    "attach_library", "one_example", "for_loop", "cond", "while_loop", "ifelse", "stateless", "with_rng",
    "next_key", "replace_item", "class_label", "nll_of_rates", "fold_keys", "stack", "example_keys",
    "example_axis", "param_items", "params_from", "padded", "Library", "batched_grad", "LossHarness",
    "example_mode", "initial_value", "first_output", "class_scores", "integrator_method", "example_values",
    "batched_property", "unviewed",
})

# Members of every batched class (``batchify.runtime.Batched``): a Variable named like one is the
# attribute ``NAME_`` there (``self.state`` -> ``self.state_``); a method named like one is refused.
RESERVED = frozenset(
    {"batch_size", "params", "state", "set_params", "set_state", "from_model", "set_batch_size", "rng_key",
     "library"}
)

# Variables that get a leading batch axis.
STATE_VARIABLES = frozenset({"brainpy.math.Variable"})

# Variables that stay shared across the batch: the weights.
PARAM_VARIABLES = frozenset({"brainpy.math.TrainVar", "brainpy.math.Parameter"})

# Functions that create a state Variable from an initializer and a size: ``bp.init.variable_(
# bm.zeros, num, self.mode)``. In __init__ they make a state field; in other methods they stand
# for the value of the Variable they create, ``bfy.initial_value(init, sizes, batch_or_mode)``.
# ``self.init_variable(init, batch_or_mode, shape=None, sharding=None)``, the spelling of BrainPy's own
# neurons and synapses (a method of ``brainpy.dynsys.Dynamic``, the base of ``bp.dyn.NeuDyn`` and
# friends): ``variable_(init, shape or self.varshape, batch_or_mode)``. A synthetic qualified name, given
# to ``self.init_variable`` in a model class of the file that does not define it (analyse.py).
INIT_VARIABLE = "brainpy.DynamicalSystem.init_variable"
STATE_FACTORIES = frozenset({"brainpy.init.variable_", "brainpy.initialize.variable_",
                             "brainpy.init.variable", "brainpy.initialize.variable", INIT_VARIABLE})

# Containers and constructors of Variables that the core does not batch yet.
# Containers of state Variables: a field holding a list or a dict of arrays.
VARIABLE_CONTAINERS = {"brainpy.math.VarList": "list", "brainpy.math.VarDict": "dict",
                       "brainpy.math.object_transform.VarList": "list",
                       "brainpy.math.object_transform.VarDict": "dict"}

UNSUPPORTED_VARIABLES = frozenset(
    {
        "brainpy.math.TimeDelay",
        "brainpy.math.NodeList",
        "brainpy.math.NodeDict",
    }
)

# BrainPy objects that hold Variables and are used as library code, like built-in models: delays,
# a model's own random state, a sequence of layers.
LIBRARY_OBJECTS = frozenset(
    {
        "brainpy.math.LengthDelay",
        "brainpy.math.delayvars.LengthDelay",
        "brainpy.VarDelay",
        "brainpy.dyn.VarDelay",
        "brainpy.math.random.RandomState",
        "brainpy.math.RandomState",
        "brainpy.math.random.default_rng",  # given a seed, a new RandomState (without: GLOBAL_STREAM_GETTERS)
        "brainpy.Sequential",
        "brainpy.dnn.Sequential",
        "brainpy.LoopOverTime",
    }
)

# Module-level calls that set what a model's numbers depend on (BrainPy's dt, mode, precision,
# platform, JAX's x64, the seeds of NumPy's and BrainPy's global random streams): copied into the
# generated module, in source order, so that importing it sets them as importing the source did.
ENVIRONMENT_SETTERS = frozenset(
    {
        "brainpy.math.set_dt",
        "brainpy.math.set_environment",
        "brainpy.math.set",
        "brainpy.math.set_mode",
        "brainpy.math.set_membrane_scaling",
        "brainpy.math.set_platform",
        "brainpy.math.enable_x64",
        "brainpy.math.disable_x64",
        "brainpy.math.set_float",
        "brainpy.math.set_int",
        "brainpy.math.set_bool",
        "brainpy.math.set_complex",
        "jax.config.update",
        # Seeding the global streams a module's weights and constants are drawn from.
        "numpy.random.seed",
        "brainpy.math.random.seed",
    }
)

# Decorators of a stateful method that its pure method keeps (the runtime reads what they mark).
KEPT_DECORATORS = frozenset({"brainpy.reset_level", "brainpy.helpers.reset_level"})

# Decorators of a stateful method that its pure method drops because they do not change what it
# computes: compilation and rematerialisation (the batch is jitted whole), and markers for type
# checkers. Any other decorator may change the result (``@doubled`` returning ``2 * f(x)``): refused.
DROPPED_DECORATORS = frozenset(
    {
        "brainpy.math.cls_jit",
        "brainpy.math.jit",
        "brainpy.math.remat",
        "brainpy.jit",
        "jax.jit",
        "jax.checkpoint",
        "jax.remat",
        "abc.abstractmethod",
        "typing.final",
        "typing.override",
        "typing_extensions.final",
        "typing_extensions.override",
    }
)

# BrainPy's groups: their constructor registers the models it is handed as children
# (``super().__init__(E2E, E=E)``), and their update runs every child.
GROUP_BASES = frozenset(
    {
        "brainpy.DynSysGroup",
        "brainpy.Network",
        "brainpy.dynsys.DynSysGroup",
        "brainpy.dynsys.Network",
        "brainpy.dyn.Network",
    }
)

# What a group's constructor takes besides its children.
GROUP_OPTIONS = frozenset({"name", "mode", "child_type"})

# What a BrainPy group has of its own (``dir(bp.DynSysGroup)`` in brainpy 2.9, and the ``children`` its
# constructor stores): a child registered under one of these names is not stored as that attribute.
GROUP_MEMBERS = frozenset(
    {
        "add_aft_update", "add_bef_update", "add_elem", "add_inp_fun", "after_updates", "before_updates",
        "children", "clear_input", "cpu", "cuda", "cur_inputs", "current_inputs", "delta_inputs",
        "format_elements", "get_aft_update", "get_bef_update", "get_delay_data", "get_delay_var", "get_inp_fun",
        "get_local_delay", "has_aft_update", "has_bef_update", "implicit_nodes", "implicit_vars", "jit_step_run",
        "load_state", "load_state_dict", "mode", "name", "nodes", "register_delay", "register_implicit_nodes",
        "register_implicit_vars", "register_local_delay", "reset", "reset_local_delays", "reset_state",
        "save_state", "setattr", "state_dict", "step_run", "sum_current_inputs", "sum_delta_inputs",
        "sum_inputs", "supported_modes", "to", "tpu", "tracing_variable", "train_vars", "tree_flatten",
        "tree_unflatten", "unique_name", "update", "update_local_delays", "vars", "child_type",
    }
)

# Base classes that make a class a model and add no state of their own.
MODEL_BASES = frozenset(
    {
        "brainpy.DynamicalSystem",
        "brainpy.DynamicalSystemNS",
        "brainpy.DynSysGroup",
        "brainpy.Network",
        "brainpy.NeuGroup",
        "brainpy.NeuGroupNS",
        "brainpy.Dynamic",
        "brainpy.dyn.NeuDyn",
        "brainpy.dyn.NeuGroup",  # the same class as bp.dyn.NeuDyn in brainpy 2.9
        "brainpy.dynsys.Dynamic",
        "brainpy.Base",  # BrainPyObject's old name, still exported
        "brainpy.math.Base",
        "brainpy.dyn.SynDyn",
        "brainpy.dyn.Dynamic",
        "brainpy.dyn.DynamicalSystem",
        "brainpy.dnn.Layer",
        "brainpy.layers.Layer",
        "brainpy.dynsys.DynamicalSystem",
        "brainpy.dynsys.DynSysGroup",
        "brainpy.dynsys.Network",
        # An older BrainPy's (2.0-2.3) spellings of the network and container bases.
        "brainpy.dyn.Network",
        "brainpy.dyn.Container",
        # Objects holding Variables and an update method, without DynamicalSystem's machinery.
        "brainpy.BrainPyObject",
        "brainpy.math.BrainPyObject",
    }
)

# Model bases with no ``update`` of their own: a class of them holding built-ins is not a group
# that BrainPy's group update runs.
UPDATELESS_BASES = frozenset({"brainpy.BrainPyObject", "brainpy.math.BrainPyObject", "brainpy.Base", "brainpy.math.Base"})

# Modules whose classes are BrainPy built-in models (neurons, synapses, layers).
BUILTIN_MODEL_PREFIXES = (
    "brainpy.dyn.",
    "brainpy.dnn.",
    "brainpy.layers.",
    "brainpy.neurons.",
    "brainpy.synapses.",
    "brainpy.rates.",
    "brainpy.channels.",
    "brainpy.synouts.",  # the older synapses' output and plasticity components
    "brainpy.synplast.",
    "brainpy.experimental.",
)

# BrainPy's control flow over closures: rewritten to carry the state when a closure changes it.
FOR_LOOPS = frozenset({"brainpy.math.for_loop", "brainpy.math.object_transform.for_loop"})
CONDS = frozenset({"brainpy.math.cond", "brainpy.math.object_transform.cond"})
WHILE_LOOPS = frozenset({"brainpy.math.while_loop", "brainpy.math.object_transform.while_loop"})
IFELSES = frozenset({"brainpy.math.ifelse", "brainpy.math.object_transform.ifelse"})
CONTROL_FLOW = FOR_LOOPS | CONDS | WHILE_LOOPS | IFELSES

# Integrators whose calls draw noise from BrainPy's global stream.
SDE_INTEGRATORS = frozenset({"brainpy.sdeint", "brainpy.integrators.sdeint", "brainpy.integrators.sde.sdeint"})

# Methods of a built-in (or of its Variables) that read and change nothing: a read of the built-in's
# state before such a call in the same statement sees the same value (BFY215 is for the others).
# A delay's readers (``bp.VarDelay.at``, ``retrieve``), then the array methods a Variable answers.
BUILTIN_READERS = frozenset("""
    at retrieve
    all any argmax argmin astype clip conj copy cumprod cumsum dot flatten item max mean min nonzero prod
    ravel repeat reshape round squeeze std sum swapaxes take tolist trace transpose var view
""".split())
# ... and the reading methods of a built-in's container (``self.proj.refs.values()``), read as one example's.
CONTAINER_READERS = frozenset({"keys", "values", "items", "get"})
BUILTIN_READERS |= CONTAINER_READERS
# ... of which the array methods a Variable answers (a delay's readers run the built-in's own code).
ARRAY_READERS = BUILTIN_READERS - {"at", "retrieve"} - CONTAINER_READERS

# A built-in's attributes that are configuration, the same for every example (``self.N.num``,
# ``self.N.varshape[0]``), not state: a Python ``if`` may test them. Any other attribute of a built-in
# may be a Variable (the transform does not import BrainPy to ask), so an ``if`` on it is BFY210.
BUILTIN_CONFIG = frozenset({"num", "varshape", "size", "mode", "name", "keep_size", "in_size", "out_size",
                            "num_in", "num_out"})

# How a Variable learned online is batched, when declared with ``--shared NAME=MODE``: one copy for
# the batch updated by the mean or the sum of the examples' updates, or one copy per example.
VARIABLE_MODES = ("mean", "sum", "example")

# Matrix products: an operand of one that a learning rule writes is a weight learned online.
MATRIX_PRODUCTS = frozenset({"brainpy.math.dot", "brainpy.math.matmul", "jax.numpy.dot", "jax.numpy.matmul",
                             "numpy.dot", "numpy.matmul"})

# The old first parameter of ``update`` holding the shared arguments (t, dt, i): BrainPy fills it
# from ``bp.share`` when a caller leaves it out, so it is shared by the batch, never per example.
SHARED_DICT_PARAMS = ("tdi", "sh", "sha")
# What BrainPy's runners and training loops keep in that dict (``bp.share``).
SHARED_KEYS = frozenset({"t", "i", "dt", "fit"})
# The older ``update(self, _t, _dt)`` signature: the clock, shared by the batch.
SHARED_CLOCK_PARAMS = ("_t", "_dt")

# BrainPy's global random draws (brainpy.math.random.<name>, all taking `key=`): rewritten to
# draw from a per-example key carried in the state.
RANDOM_MODULE = "brainpy.math.random."
RANDOM_SAMPLERS = frozenset("""
    rand randn randint random_integers random random_sample ranf sample choice permutation shuffle
    beta exponential gamma gumbel laplace logistic normal pareto poisson standard_cauchy
    standard_exponential standard_gamma standard_normal standard_t uniform truncated_normal bernoulli
    lognormal binomial chisquare dirichlet geometric f hypergeometric logseries multinomial
    multivariate_normal negative_binomial noncentral_chisquare noncentral_f power rayleigh triangular
    vonmises wald weibull weibull_min maxwell t orthogonal loggamma categorical zipf rand_like
    randn_like randint_like
""".split())

# Draws that cannot be made per example: numpy's run once, at trace time.
UNBATCHABLE_RANDOM_PREFIXES = ("numpy.random.",)
# BrainPy's global key used directly, not through a sampler batchify rewrites: traced once, the
# whole batch would share its draws (``jax.random.normal(bm.random.split_key(), ...)``).
GLOBAL_KEY = frozenset({"brainpy.math.random.split_key", "brainpy.math.random.split_keys",
                        "brainpy.math.random.get_key", "brainpy.math.random.get_key_data",
                        "brainpy.math.random.DEFAULT", "brainpy.math.random.default_rng",
                        "brainpy.math.random.get_rng"})


# ``self.rng = bm.random.default_rng()`` (no seed) / ``= bm.random.DEFAULT``: BrainPy's global stream
# itself held as an object; ``self.rng.normal(...)`` is a draw from it, rewritten like ``bm.random.normal``.
GLOBAL_STREAM_GETTERS = frozenset({"brainpy.math.random.default_rng"})
GLOBAL_STREAM = "brainpy.math.random.DEFAULT"
GLOBAL_STREAM_MODULE = "brainpy.math.random"  # ``self.rand = bm.random``: its samplers draw from it too


# BrainPy's shared context, written: ``bp.share.save(key, value)``, ``bp.share[key] = value``.
SHARE_SAVES = frozenset({"brainpy.share.save", "brainpy.context.share.save"})
SHARE_LOADS = frozenset({"brainpy.share.load", "brainpy.context.share.load"})


def random_sampler(qualified: str) -> bool:
    return qualified.startswith(RANDOM_MODULE) and qualified[len(RANDOM_MODULE):] in RANDOM_SAMPLERS


# Initializers that draw nothing: an initial value made with one of these needs no random key.
DETERMINISTIC_INITIALIZERS = frozenset(
    f"{module}.{fn}"
    for module in ("brainpy.math", "jax.numpy", "numpy")
    for fn in ("zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "empty", "asarray", "array")
) | frozenset(
    f"{module}.{cls}"
    for module in ("brainpy.init", "brainpy.initialize")
    for cls in ("ZeroInit", "OneInit", "Constant", "Identity")
)


# BrainPy exports many classes and functions from more than one module (``bp.Projection`` is
# ``bp.dyn.Projection`` is ``bp.dynsys.Projection``; ``bm.TrainVar`` is
# ``bm.object_transform.TrainVar``). The tables above list one spelling of each; ``canonical`` maps
# the others onto it, so that a name is recognised however it was imported. Without it a class
# derived from ``bp.Projection`` was neither a model nor library code, and a network holding one
# called it unbatched. tests/test_names.py checks every alias against BrainPy itself.
MODULE_ALIASES = (("brainpy.initialize.", "brainpy.init."),)  # (a module, the same module as listed)
NAME_ALIASES = {
    "brainpy.Projection": "brainpy.dyn.Projection",
    "brainpy.dynsys.Projection": "brainpy.dyn.Projection",
    "brainpy.dynsys.Sequential": "brainpy.Sequential",
    "brainpy.dynsys.variable_": "brainpy.init.variable_",
    "brainpy.helpers.DynamicalSystem": "brainpy.DynamicalSystem",
    "brainpy.helpers.IonChaDyn": "brainpy.dyn.IonChaDyn",
    "brainpy.optim.BrainPyObject": "brainpy.math.BrainPyObject",
    "brainpy.math.object_transform.jit": "brainpy.math.jit",
    "brainpy.math.object_transform.cls_jit": "brainpy.math.cls_jit",
    "brainpy.math.object_transform.Variable": "brainpy.math.Variable",
    "brainpy.math.object_transform.TrainVar": "brainpy.math.TrainVar",
    "brainpy.math.object_transform.Parameter": "brainpy.math.Parameter",
    "brainpy.math.object_transform.VarList": "brainpy.math.VarList",
    "brainpy.math.object_transform.VarDict": "brainpy.math.VarDict",
    "brainpy.math.object_transform.NodeList": "brainpy.math.NodeList",
    "brainpy.math.object_transform.NodeDict": "brainpy.math.NodeDict",
    "brainpy.math.object_transform.BrainPyObject": "brainpy.math.BrainPyObject",
    "brainpy.math.object_transform.Base": "brainpy.math.Base",
    "brainpy.math.delayvars.Variable": "brainpy.math.Variable",
    "brainpy.math.delayvars.BrainPyObject": "brainpy.math.BrainPyObject",
    "brainpy.math.delayvars.TimeDelay": "brainpy.math.TimeDelay",
    "brainpy.math.delayvars.LengthDelay": "brainpy.math.LengthDelay",
    "brainpy.math.delayvars.cond": "brainpy.math.cond",
    "brainpy.math.var_list": "brainpy.math.VarList",
    "brainpy.math.var_dict": "brainpy.math.VarDict",
    "brainpy.math.node_list": "brainpy.math.NodeList",
    "brainpy.math.node_dict": "brainpy.math.NodeDict",
    "brainpy.math.object_transform.var_list": "brainpy.math.VarList",
    "brainpy.math.object_transform.var_dict": "brainpy.math.VarDict",
    "brainpy.math.object_transform.node_list": "brainpy.math.NodeList",
    "brainpy.math.object_transform.node_dict": "brainpy.math.NodeDict",
}


def canonical(qualified: str) -> str:
    """The spelling the tables use for ``qualified`` (``brainpy.dynsys.Projection`` ->
    ``brainpy.dyn.Projection``); any other name as it is."""
    if not qualified.startswith("brainpy."):
        return qualified
    for module, listed in MODULE_ALIASES:
        if qualified.startswith(module):
            qualified = listed + qualified[len(module):]
    return NAME_ALIASES.get(qualified, qualified)


def is_library(qualified: str) -> bool:
    """A BrainPy built-in model or object that a model may hold as library code."""
    return qualified in LIBRARY_OBJECTS or is_builtin_model(qualified)


def is_builtin_model(qualified: str) -> bool:
    last = qualified.rsplit(".", 1)[-1]
    return (
        qualified not in MODEL_BASES
        and qualified.startswith(BUILTIN_MODEL_PREFIXES)
        and last[:1].isupper()
    )

# Top-level packages whose classes are no other file's models: a class deriving from one of them is
# not reported as left out (BFY019).
KNOWN_PACKAGES = frozenset({"brainpy", "brainstate", "brainunit", "braintools", "brainevent", "saiunit", "jax",
                            "jaxlib", "numpy", "scipy", "optax", "flax", "equinox", "torch"}) | frozenset(
    sys.stdlib_module_names)


def pure_name(method: str) -> str:
    """``update`` -> ``update_pure``; ``__call__`` -> ``call_pure`` (``__call___pure`` would be
    name-mangled inside class bodies, ``self.c.__call___pure`` reading ``_Net__call___pure``)."""
    if method.startswith("__") and method.endswith("__"):
        method = method[2:-2]
    return f"{method}_pure"

# Built-ins that ask what an object is rather than compute with its value: of a Variable, the batched
# step holds only the value (``rewrite.methods.ExprRewriter.variable_object``, ``aliases``).
OBJECT_QUESTIONS = frozenset({"isinstance", "type", "hasattr"})

# Attributes a Variable has and its value (an array) has not: ``hasattr(self.V, "value")`` would answer
# otherwise in the batched step, which holds the value.
VARIABLE_ONLY_ATTRIBUTES = frozenset({"value", "batch_axis", "batch_size", "axis_names", "batch_axis_name"})

# Classes that neither a Variable nor an array is an instance of (``isinstance(a, (int, float))`` is False
# of both): every other class may tell them apart (``bm.Variable``, ``bm.Array``, ``jax.Array``, a local).
PLAIN_TYPES = frozenset({"int", "float", "complex", "bool", "str", "bytes", "bytearray", "list", "tuple", "dict",
                         "set", "frozenset", "range", "slice", "memoryview"})
