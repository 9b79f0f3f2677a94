"""faasgd: distributed Downpour SGD as stateful OpenFaaS functions over Redis or Memcached."""

__version__ = "0.1.0"

from faasgd.minibatch import batch_note  # noqa: E402,F401  the summaries' note on rows a step (faasgd.minibatch)
