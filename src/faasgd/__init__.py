"""faasgd: distributed Downpour SGD as stateful OpenFaaS functions over Redis or Memcached."""

__version__ = "0.1.0"
