"""What a stacking job may ask for, checked before the driver writes or allocates anything.

    check(config, {"memory_limit": "1Gi"})  # TooLarge (413) naming n_samples or n_features when it cannot fit

A stacking call's memory is the interpreter with scikit-learn loaded plus its share of the dataset's cells
(n_samples x n_features): the driver holds make_classification's float64 matrix, its float32 copy, the split
and the npz it sends (measured: 24 bytes a cell); a trainer holds the npz, the arrays and the float64 copies
a regressor fits on (measured with the driver in one process: 34 bytes a cell). Over the function's
`memory_limit` (its environment, as stack.yml keeps it equal to `limits.memory`) the job is a 413 naming the
larger of the two sizes, and nothing is created. Without a `memory_limit`, DEFAULT_MEMORY_LIMIT applies (the
stacking functions' `limits.memory` in stack.yml): test.sh checks a matrix's configurations against it too.
"""

from __future__ import annotations

from typing import Mapping

from faasgd.errors import TooLarge
from faasgd.functions.admission import mib, quantity
from faasgd.stacking.config import StackingConfig

INTERPRETER_BYTES = 200 << 20  # python, numpy, scipy, scikit-learn, redis, flask: measured ~173 MiB
BYTES_PER_CELL = 36  # one call's peak per dataset cell (the module's docstring); measured 24 (driver), 34 (trainer)
DEFAULT_MEMORY_LIMIT = "1Gi"  # the stacking functions' limits.memory in stack.yml


def needs(config: StackingConfig) -> int:
    """Bytes the heaviest call of the job needs at its peak."""
    return INTERPRETER_BYTES + config.n_samples * config.n_features * BYTES_PER_CELL


def check(config: StackingConfig, env: Mapping[str, str] | None = None) -> dict[str, int]:
    """Refuse (TooLarge, a 413) a job whose calls would not fit the function's memory_limit; what it needs."""
    text = (env or {}).get("memory_limit") or DEFAULT_MEMORY_LIMIT
    limit = quantity("memory_limit", text)
    need = needs(config)
    if need > limit:
        field = "n_samples" if config.n_samples >= config.n_features else "n_features"
        raise TooLarge(field, f"a {config.n_samples:,} x {config.n_features:,} dataset needs {mib(need)} in each "
                              f"stacking call ({BYTES_PER_CELL} bytes a cell), over the function's "
                              f"memory_limit={text}; lower n_samples or n_features")
    return {"call_bytes": need}
