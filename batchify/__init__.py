"""batchify: rewrite a single-example BrainPy model into a batched, explicit-state module.

The transform path (this package minus ``batchify.loader``'s callers) never imports
jax or brainpy, so that pre-commit and IDE calls stay fast; ``transform`` (LibCST, Jinja)
is imported on first use, so that a hook run whose outputs are up to date never loads it.
"""

__version__ = "0.1.0"

__all__ = ["TransformResult", "__version__", "transform"]


def __getattr__(name: str):
    if name in ("transform", "TransformResult"):
        from batchify import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'batchify' has no attribute {name!r}")
