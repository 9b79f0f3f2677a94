"""A job's model from Python: load it (from a job or an npz file), save it, evaluate it.

    model = api.load_model(job)                    # or api.load_model("model.npz")
    model.test_accuracy, model.sizes               # faasgd.job.model_file.ModelFile
    api.save_model(job, "model.npz")               # `faasgd model J -o model.npz`
    api.evaluate("model.npz")["test_accuracy"]     # `faasgd evaluate model.npz`

Files are npz without pickled objects (faasgd.job.model_file.FIELDS), read with allow_pickle=False, and placed
atomically: a temporary file beside the target, then a rename, so a reader never sees half a file.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any

from faasgd.checks import whole_number
from faasgd.api.jobs import Job
from faasgd.errors import ConfigError
from faasgd.job import model_file
from faasgd.job.model_file import ModelFile


def load_model(job_or_file: Job | ModelFile | str | os.PathLike) -> ModelFile:
    """A job's model (asked of the gateway or its store) or a model file's, checked field by field.

        >>> model = load_model(job)               # doctest: +SKIP
        >>> model.source, model.validation_accuracy   # doctest: +SKIP
        ('crossing', 0.8125)
    """
    if isinstance(job_or_file, ModelFile):
        return job_or_file
    if isinstance(job_or_file, Job):
        return model_file.from_npz(job_or_file.model_bytes())
    if isinstance(job_or_file, (str, os.PathLike)):
        return model_file.from_npz(os.fspath(job_or_file))
    raise ConfigError("model", f"must be a Job, a ModelFile or an npz file's path, got {type(job_or_file).__name__}")


def output_path(path: str | os.PathLike) -> Path:
    """A file path in an existing folder; ConfigError('output') naming it otherwise (checked before any call)."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
    target = Path(text)
    if not text or target.is_dir() or not target.parent.is_dir():
        raise ConfigError("output", f"must be a file path in an existing folder, got {path!r}")
    return target


def save_model(job: Job, path: str | os.PathLike) -> ModelFile:
    """Write the job's model to `path` (an npz file, placed atomically) after checking it reads back; the model.

        >>> save_model(job, "model.npz").test_accuracy   # doctest: +SKIP
        0.8731
    """
    target = output_path(path)
    raw = job.model_bytes()
    found = model_file.from_npz(raw)  # what is placed reads back
    place(raw, target)
    return found


def place(raw: bytes, target: Path) -> None:
    """Write `raw` to a temporary file beside `target`, then rename it over `target` (never a half file)."""
    fd, part = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(part, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(part)
        raise


def evaluate(model: Job | ModelFile | str | os.PathLike, dataset: str | None = None,
             test_samples: int | None = None) -> dict[str, Any]:
    """A model's test accuracy computed on this machine: on the first `test_samples` test rows (0: all;
    default as many as the job measured) of `dataset` (default: the one it trained on). The answer has
    test_accuracy, rows, dataset, and reported_test_accuracy (the job's own figure, when measured alike).

        >>> evaluate("model.npz")["test_accuracy"]     # doctest: +SKIP
        0.8731
    """
    if test_samples is not None:
        whole_number(test_samples, "test_samples", low=0, must="0 (all rows) or a positive whole number")
    return model_file.evaluate_file(load_model(model), dataset, test_samples)
