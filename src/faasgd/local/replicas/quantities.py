"""Kubernetes resource quantities as a pod's limits and requests give them: memory in bytes, CPU in cores.

    memory_bytes("512Mi", "limits.memory")  # 536870912
    cpu_cores("500m", "requests.cpu")       # 0.5

The container backend turns them into `docker run` flags (faasgd.local.replicas.containers); a process replica takes its
BLAS threads from limits.cpu (faasgd.local.replicas.environment).
"""

from __future__ import annotations

import re

from faasgd.errors import ConfigError

_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T|m)?$")
_FACTORS = {None: 1, "k": 1000, "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3, "T": 1000 ** 4,
            "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "Ti": 1024 ** 4}


def memory_bytes(quantity: str, field_name: str) -> int:
    """A Kubernetes memory quantity (1Gi, 512Mi, 1G, 1000) in bytes; ConfigError naming the field."""
    match = _QUANTITY.match(quantity.strip())
    if not match or match.group(2) == "m":
        raise ConfigError(field_name, f"not a memory quantity such as 512Mi or 1Gi: {quantity!r}")
    return int(float(match.group(1)) * _FACTORS[match.group(2)])


def cpu_cores(quantity: str, field_name: str) -> float:
    """A Kubernetes CPU quantity (1, 0.5, 500m) in cores; ConfigError naming the field."""
    match = _QUANTITY.match(quantity.strip())
    if not match or match.group(2) not in (None, "m"):
        raise ConfigError(field_name, f"not a CPU quantity such as 500m or 1: {quantity!r}")
    cores = float(match.group(1)) / (1000 if match.group(2) == "m" else 1)
    if cores <= 0:
        raise ConfigError(field_name, f"must be above 0, got {quantity!r}")
    return cores
