"""The convex models of LambdaML (issue 14), as pure numpy functions on one flat float32 vector.

`lr` (logistic regression, binary or multinomial) and `svm` (linear, hinge) share one layout and
one interface: `init(n_features, n_classes)`, `loss_and_grad(flat, X, y, l2)`, `predict`,
`accuracy`; `kmeans` gives Lloyd's iteration as per-shard partials and a merge; `admm` runs
consensus ADMM over lr or svm. Inputs are dense float arrays or scipy CSR matrices, kept sparse.
No store, no function, no config here: the sync rounds and the workers call these functions.
"""

from types import ModuleType

from faasgd.lambdaml.convex import admm, kmeans, lr, svm
from faasgd.errors import ConfigError

MODELS: dict[str, ModuleType] = {"lr": lr, "svm": svm, "kmeans": kmeans}
LINEAR = ("lr", "svm")  # the models ADMM, grad_avg and model_avg train by gradients


def get_model(name: str) -> ModuleType:
    """Return the model module called `name`; ConfigError('model') naming the allowed ones otherwise."""
    if name not in MODELS:
        raise ConfigError("model", f"unknown model {name!r} (allowed: {', '.join(sorted(MODELS))})")
    return MODELS[name]


__all__ = ["LINEAR", "MODELS", "admm", "get_model", "kmeans", "lr", "svm"]
