"""Rows a step: the per-worker `batch_size`, the `global_batch_size` split among the workers, and the note
that tells a user when a job's workers take far more rows a step than one worker converges with.

    load_config({}, {"global_batch_size": 512, "number_of_workers": 4}).batch_size  # 128 rows per worker
    batch_note(config)  # None, or one line naming the rows a step, the evidence and what to set instead

`global_batch_size` is the rows all workers take together in one step; 0 means not set, and then
`batch_size` is per worker (as in Downpour, LambdaML and PyTorch's DDP). Set, it must divide evenly among
`number_of_workers` (each worker takes global / workers rows): a remainder is refused, naming both fields and
the nearest multiples, because a job labelled 512 rows a step that took 510 would not compare like with like.
Giving both keys in one place (one body, one set of flags, one environment) is refused, naming both; a later
place's choice replaces an earlier place's (a body's `global_batch_size` replaces stack.yml's `batch_size`).
"""

from __future__ import annotations

from typing import Any, Mapping

from faasgd.errors import ConfigError

MAX_BATCH = 65536  # rows per worker a step, at most
MAX_GLOBAL_BATCH = MAX_BATCH * 1024  # the most workers (1024) at the most rows each
BATCH_KEYS = ("batch_size", "global_batch_size")

REFERENCE_ROWS = 128  # rows a step one worker converges with (measured on Fashion-MNIST; batch_note says where)
FAR_ABOVE = 2  # a note when workers x batch_size exceeds this many times REFERENCE_ROWS (batch_note says why)
NOTED_MODELS = ("mlp", "cnn")  # the measurement is of minibatch SGD on images; the convex models are not covered


def given(values: Mapping[str, Any], key: str) -> bool:
    """Whether a source chose this batch key (a global_batch_size of 0 means not set)."""
    return values.get(key) is not None and (key != "global_batch_size" or values[key] != 0)


def check_one_batch(values: Mapping[str, Any], source: str) -> None:
    """ConfigError naming both keys when one source gives both a per-worker and a global batch size."""
    if given(values, "batch_size") and given(values, "global_batch_size"):
        raise ConfigError("global_batch_size", f"give batch_size (rows per worker) or global_batch_size (rows a step "
                                               f"across all workers, split among them), not both; the {source} gave "
                                               f"batch_size {values['batch_size']!r} and global_batch_size "
                                               f"{values['global_batch_size']!r}")


def merge_sources(lower: Mapping[str, Any], higher: Mapping[str, Any], names: tuple[str, str]) -> dict[str, Any]:
    """`higher` over `lower` (parsed values of two sources, e.g. environment then body), where a batch key chosen
    by `higher` replaces either batch key of `lower`. `names` name the two sources in errors."""
    check_one_batch(lower, names[0])
    check_one_batch(higher, names[1])
    merged = dict(lower)
    if any(given(higher, key) for key in BATCH_KEYS):
        for key in BATCH_KEYS:
            merged.pop(key, None)
    merged.update(higher)
    return merged


def split_global_batch(global_batch_size: int, number_of_workers: int) -> int:
    """Each worker's rows a step; ConfigError naming global_batch_size when it does not divide evenly."""
    per_worker, remainder = divmod(global_batch_size, number_of_workers)
    if remainder:
        below = global_batch_size - remainder
        nearest = f"{below} or {below + number_of_workers}" if below else f"{number_of_workers}"
        raise ConfigError("global_batch_size", f"{global_batch_size} rows do not split evenly among "
                                               f"number_of_workers {number_of_workers}: give a multiple of "
                                               f"{number_of_workers} (nearest: {nearest}), or batch_size per worker")
    if per_worker > MAX_BATCH:
        raise ConfigError("global_batch_size", f"{global_batch_size} rows among {number_of_workers} worker(s) is "
                                               f"{per_worker} rows each, more than batch_size's {MAX_BATCH}")
    return per_worker


def _read(config: Any, key: str) -> Any:
    return config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)


def batch_note(config: Any) -> str | None:
    """One line when the job's workers x batch_size lies far above the rows a step one worker converges with
    (more than FAR_ABOVE x REFERENCE_ROWS), for the models measured (NOTED_MODELS); None otherwise. `config` is a
    TrainConfig or its record (a job's `config`, a runs.csv row): a record without the keys gets None.

    Where the note's threshold comes from: bench/batch_bound.py and docs/explanation/downpour.md "Update rules" / "More workers"
    (Fashion-MNIST, 784-100-10 tanh, 0.85 validation accuracy, 5 seeds). One worker converges at 128 rows a step,
    the default batch_size (of the batches measured, 128 needs the fewest samples at its best learning rate).
    Split among 2-8 workers, 128 rows a step needed 1.0-1.42x one worker's samples (4 x 32: 1.09x, worst seed 1.20x).
    256 rows (2 x 128, the default job) needed 1.62x with `average`; McCandlish et al.'s model, from the noise scale
    of 90-430 rows measured along one worker's run, puts it at 1.2-1.6x. 512 rows needed at least 1.67x under any
    rule of plain SGD steps (the bound, at its best learning rate) and 3.0-3.26x through the product (4 x 128);
    1,024 rows at least 3.0x. So above 2x the reference the extra samples pass 2x one worker's and grow with the
    rows: that is "far above", and the default 2 x 128 stays below it.
    """
    workers, batch, model = (_read(config, key) for key in ("number_of_workers", "batch_size", "model"))
    try:
        workers, batch = int(workers), int(batch)
    except (TypeError, ValueError):
        return None
    rows = workers * batch
    if (model or "mlp") not in NOTED_MODELS or rows <= FAR_ABOVE * REFERENCE_ROWS:
        return None
    who = f"{workers} workers x {batch} rows" if workers > 1 else f"1 worker x {batch} rows"
    return (f"note: {who} = {rows:,} rows a step, {rows / REFERENCE_ROWS:.3g}x the {REFERENCE_ROWS} one worker "
            f"converges with; on Fashion-MNIST 512 rows a step needed 1.7-3.3x one worker's samples to 0.85 "
            f"(docs/explanation/downpour.md, \"More workers\"): to compare with one worker set global_batch_size {REFERENCE_ROWS}")
