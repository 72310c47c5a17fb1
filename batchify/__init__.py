"""batchify: rewrite a single-example BrainPy model into a batched, explicit-state module.

The transform path (this package minus ``batchify.loader``'s callers) never imports
jax or brainpy, so that pre-commit and IDE calls stay fast.
"""

__version__ = "0.1.0"

from batchify.pipeline import TransformResult, transform  # noqa: E402

__all__ = ["TransformResult", "__version__", "transform"]
