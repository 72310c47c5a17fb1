"""How well the harness's concurrent parts use the cores, against what the cores themselves allow.

On one CPU device the harness's ``train_step`` runs a batch as concurrent parts, one jitted
execution per thread (``Harness(threads=None)``; ``bench/side_by_side.py`` prints the plan). This
asks why two parts are not twice as fast as one, on ``bench/side_by_side.py``'s SNN:

1. In this process, interleaved rounds (each sample at least ~50 ms of back-to-back calls):
   - ``one part alone``: part 0's jitted execution (B / parts examples), nothing beside it;
   - ``parts on threads``: the harness's ``train_step`` (every part on its own thread, then the
     jitted optimizer step);
   - ``parts one after the other``: the same executions and optimizer step, each waited for in turn;
   - ``parts from one thread``: the same, every part dispatched before any is waited for (JAX's
     asynchronous dispatch; XLA:CPU decides whether they overlap).
2. As processes: the one-part program (a harness of B / parts examples, one execution) run by one
   process alone, by ``parts`` processes at once, and by as many at once each pinned to a core of
   its own (``os.sched_setaffinity`` before JAX starts, where the OS has it). Processes share no XLA thread pool: their
   ratio to the one alone is what the cores, caches and memory cost, with XLA's runtime left out.

Part 1 calls the harness's own part and optimizer-step functions (``_part_means``, ``_mean_step``)
on purpose: it takes ``train_step`` apart to time its pieces. Ratios are medians over rounds of that
round's ratio. Usage:
python bench/parts_bench.py [--batch 64] [--steps 50] [--rounds 15] [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def harness(batch: int, steps: int, threads):
    """``(harness, params, opt_state, xs, ys)`` for ``bench/side_by_side.py``'s SNN at ``batch``."""
    import brainpy.math as bm
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from batchify import transform
    from batchify.harness import HarnessOptions
    from batchify.loader import load_generated, load_models
    from side_by_side import LR, SOURCE

    folder = Path(tempfile.mkdtemp())
    (folder / "snn.py").write_text(SOURCE)
    (folder / "snn_batched.py").write_text(
        transform(SOURCE.encode(), "snn.py", command="batchify", harness=HarnessOptions(readout="sum")).text)
    original = load_models(folder / "snn.py").SNN
    generated = load_generated(folder / "snn_batched.py")
    bm.random.seed(0)
    batched = generated.SNNBatched.from_model(original(64, 256, 10), batch)
    trainer = generated.SNNHarness(batched, optax.sgd(LR), threads=threads, devices=jax.devices()[:1])
    params = batched.params()
    rng = np.random.default_rng(batch)
    xs = jnp.asarray((rng.random((batch, steps, 64)) < 0.2).astype(np.float32) * 1.5)
    ys = jnp.asarray(rng.integers(0, 10, batch).astype(np.int32))
    return trainer, params, trainer.optimizer.init(params), xs, ys


def per_call(function, seconds=0.05):
    """Seconds per call of ``function``, over as many calls back to back as last ``seconds``."""
    function()
    start = time.perf_counter()
    function()
    reps = max(1, round(seconds / (time.perf_counter() - start)))
    start = time.perf_counter()
    for _ in range(reps):
        function()
    return (time.perf_counter() - start) / reps


def in_process(args) -> int:
    import jax

    trainer, params, opt_state, xs, ys = harness(args.batch, args.steps, None)
    parts = trainer.microbatch_plan(xs, ys).parts
    if parts < 2:
        print(f"B = {args.batch}: the harness makes no parts here (plan {trainer.microbatch_plan(xs, ys)})")
        return 1

    def part(p):
        return trainer._part_means(p, parts, params, xs, ys)

    def one_part_alone():
        jax.block_until_ready(part(0))

    def parts_on_threads():
        jax.block_until_ready(trainer.train_step(params, opt_state, xs, ys))

    def parts_one_after_the_other():
        means = [jax.block_until_ready(part(p)) for p in range(parts)]
        jax.block_until_ready(trainer._mean_step(params, opt_state, *means))

    def parts_from_one_thread():
        means = [part(p) for p in range(parts)]
        jax.block_until_ready(trainer._mean_step(params, opt_state, *means))

    variants = {"one part alone": one_part_alone, "parts on threads": parts_on_threads,
                "parts one after the other": parts_one_after_the_other, "parts from one thread": parts_from_one_thread}
    # The same step either way: the parts' optimizer step against the harness's own.
    want = trainer.train_step(params, opt_state, xs, ys)[0]
    got = trainer._mean_step(params, opt_state, *[part(p) for p in range(parts)])[0]
    for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
        if not jax.numpy.allclose(a, b, rtol=1e-6, atol=1e-7):
            raise SystemExit("the parts' step differs from train_step's")
    times = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, function in variants.items():
            times[name].append(per_call(function))
    alone = times["one part alone"]
    print(f"B = {args.batch}, {parts} parts of {args.batch // parts} on {os.cpu_count()} cores, in one process "
          f"({args.rounds} interleaved rounds):")
    for name, samples in times.items():
        ratio = statistics.median(t / a for t, a in zip(samples, alone))
        print(f"  {name:27} {statistics.median(samples) * 1e3:7.2f} ms  {ratio:5.2f}x one part alone")
    speedup = statistics.median(s / t for s, t in zip(times["parts one after the other"], times["parts on threads"]))
    print(f"  threads over one after the other: {speedup:.2f}x (at most {parts}x)")
    return parts


def child(args) -> None:
    """One process's share: the one-part program, timed after the parent says go (stdin)."""
    import jax

    trainer, params, opt_state, xs, ys = harness(args.batch, args.steps, 1)
    run = lambda: jax.block_until_ready(trainer.train_step(params, opt_state, xs, ys))  # noqa: E731
    for _ in range(5):
        run()
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    for _ in range(args.calls):
        run()
    print(f"{(time.perf_counter() - start) / args.calls * 1e3:.3f}", flush=True)


def processes(args, parts: int) -> None:
    """The one-part program in ``parts`` processes: alone, together, and together each on its own core."""
    pinnable = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= parts
    cores = sorted(os.sched_getaffinity(0)) if pinnable else []
    command = [sys.executable, __file__, "--child", "--batch", str(args.batch // parts), "--steps", str(args.steps),
               "--calls", str(args.calls)]

    def together(count, pin):
        children = [subprocess.Popen(command + (["--core", str(cores[i])] if pin else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                    for i in range(count)]
        try:
            for c in children:
                if c.stdout.readline().strip() != "ready":
                    raise SystemExit("a child process failed")
            for c in children:  # all compiled: go together
                c.stdin.write("go\n")
                c.stdin.flush()
            return [float(c.stdout.readline()) for c in children]
        finally:
            for c in children:
                c.wait()

    print(f"\nThe one-part program (B = {args.batch // parts}, one execution), {args.calls} calls a process:")
    alone = together(1, False)[0]
    print(f"  one process alone:                 {alone:7.2f} ms a step")
    shared = together(parts, False)
    print(f"  {parts} processes at once:              " + ", ".join(f"{t:.2f}" for t in shared)
          + f" ms a step ({max(shared) / alone:.2f}x alone)")
    if pinnable:
        pinned_alone = together(1, True)[0]
        pinned = together(parts, True)
        print(f"  one process alone, pinned:         {pinned_alone:7.2f} ms a step")
        print(f"  {parts} processes at once, pinned:      " + ", ".join(f"{t:.2f}" for t in pinned)
              + f" ms a step ({max(pinned) / pinned_alone:.2f}x alone, pinned)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300, help="steps each process times (part 2)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--core", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.core is not None:  # a pinned child: before JAX starts its threads, so they inherit it
        os.sched_setaffinity(0, {args.core})
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # side_by_side's model
    if args.child:
        child(args)
        return
    parts = in_process(args)
    if parts >= 2:
        processes(args, parts)


if __name__ == "__main__":
    main()
