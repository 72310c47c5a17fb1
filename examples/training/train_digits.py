"""Train the seed-style spiking classifier (examples/spiking_classifier.py, written for ONE
example) on minibatches of scikit-learn's bundled digits, with the harness batchify generated
into examples/spiking_classifier_batched.py. No download: the digits ship with scikit-learn.

    python examples/training/train_digits.py [--epochs 30] [--batch-size 64] [--no-progress] [--checkpoint DIR]

With ``--checkpoint DIR`` every epoch is saved there (weights, optimizer state, epoch, shuffling and
random keys: batchify.runtime.Checkpoints, orbax), and a run finding a checkpoint resumes after it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import brainpy.math as bm
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spiking_classifier import SpikingClassifier  # noqa: E402  (its training code is under __main__)
from spiking_classifier_batched import SpikingClassifierBatched, SpikingClassifierHarness  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=5e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--checkpoint", metavar="DIR", help="save every epoch there; resume from it if present")
    parser.add_argument("--history", metavar="FILE", help="write the per-epoch history (.json or .csv)")
    args = parser.parse_args(argv)

    digits = load_digits()
    xs = (digits.data / 16.0).astype(np.float32)
    ys = digits.target.astype(np.int32)
    x_train, x_test, y_train, y_test = train_test_split(xs, ys, test_size=0.25, random_state=args.seed,
                                                        stratify=ys)
    bm.random.seed(args.seed)
    model = SpikingClassifier(64, args.hidden, 10)  # the user's single-example model
    batched = SpikingClassifierBatched.from_model(model, args.batch_size)  # shares model's TrainVars
    harness = SpikingClassifierHarness(batched, learning_rate=args.learning_rate)

    start = time.perf_counter()
    params, history = harness.fit(x_train, y_train, epochs=args.epochs, batch_size=args.batch_size,
                                  seed=args.seed, progress=not args.no_progress, eval_data=(x_test, y_test),
                                  checkpoint=args.checkpoint, history_file=args.history)
    seconds = time.perf_counter() - start
    test_loss, test_accuracy = harness.evaluate(params, x_test, y_test)
    # The original single-example model holds the trained weights too (the same TrainVars).
    assert np.array_equal(np.asarray(model.w_in.value), np.asarray(params.w_in))
    print(f"test accuracy {test_accuracy:.3f}, test loss {test_loss:.3f}, "
          f"{args.epochs} epochs in {seconds:.1f} s ({len(x_train)} training, {len(x_test)} test digits)")
    return {"accuracy": test_accuracy, "loss": test_loss, "seconds": seconds, "history": history}


if __name__ == "__main__":
    main()
