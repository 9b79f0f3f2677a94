"""The job's trained model: the parameters that met the target, kept atomically, else the last ones; as an npz file.

At the crossing (a worker's epoch end, downpour/worker.py) the worker whose validation accuracy of the
global parameters it fetched reaches the target writes exactly those parameters as its candidate
copy `crossing-<worker>` (store.keep_copy, which pushes never change), evaluates their test accuracy,
then claims the job's `done` record set-if-absent, naming that copy. The claim is the commit point:
the first claim wins and is never replaced, so later pushes and later crossings change nothing (a
losing candidate stays in the store unnamed, one copy per worker at most). Because the copy is whole
before `done` exists, a reader who sees `done` always finds its model.
A job that ends without reaching its target keeps its last global parameters as copy
keys.LAST_PARAMS_COPY (`keep_last_params`), written (and evaluated) by the worker that writes the
result, before the result record (faasgd.job.ending).

The file (`faasgd model JOB -o model.npz`, read back by `faasgd evaluate`): an npz (numpy's zip of
.npy arrays) without any pickled object, fields FIELDS below; strings are numpy unicode arrays.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from faasgd import data, model
from faasgd.config import ACTIVATIONS, LOCATION_KEYS
from faasgd.errors import ConfigError, NoModel, StoreError
from faasgd.job import npz_reader
from faasgd.job.records import mark_done, read_job, trained_by
from faasgd.store import ParameterStore, keys

FORMAT = 1  # the file format's version (field `format`)
SOURCE_CROSSING = "crossing"  # field `source` of the parameters that met the target (the crossing's copy)
SOURCE_LAST_PARAMS = "final"  # field `source` of the last parameters of a job that ended below its target
MAX_TEST_SAMPLES = 100_000_000  # field test_samples at most (a job's test_samples is bounded alike)
EVAL_CHUNK = 1024  # rows scaled to float32 at a time during evaluation
FIELDS = {  # name: what it holds
    "format": "int64 scalar: this format's version (1)",
    "params": "float32 (n,): the flat parameters, layer by layer W then b (faasgd.model's layout)",
    "sizes": "int64 (layers + 1,): layer widths, input first, classes last",
    "activation": "unicode scalar: hidden-layer non-linearity, tanh or relu",
    "dataset": "unicode scalar: the data set the job trained on",
    "job_id": "unicode scalar: the job",
    "source": "unicode scalar: crossing (the parameters that met the target) or final (the last ones: the job ended "
              "below it)",
    "version": "int64 scalar: the global parameter version (pushes applied) of these parameters",
    "validation_accuracy": "float64 scalar: accuracy on the job's held-out validation rows",
    "test_accuracy": "float64 scalar: accuracy on the job's test rows (test_samples of them)",
    "test_samples": "int64 scalar: the test rows that accuracy was measured on (0: all)",
}
OPTIONAL = {  # present in some files only
    "cnn_arch": "unicode scalar: a cnn job's architecture (faasgd.model.cnn_layout; params in its layout, sizes "
                "(pixels, classes)); absent: the MLP of sizes",
    "config": "unicode scalar: the job's configuration as JSON, without its store locations (what `faasgd resume "
              "--model` starts the new job from)",
    "trained": "unicode scalar: JSON {samples, epochs, wall_s}: what the job (and the jobs it resumed) had trained "
               "when the file was written, which a job resumed from the file counts on from",
}
MAX_JSON_CHARS = 64 * 1024  # a config or trained field longer than this is not one faasgd wrote


@dataclass(frozen=True)
class ModelFile:
    """A job's model as the npz file holds it."""

    params: np.ndarray
    sizes: tuple[int, ...]
    activation: str
    dataset: str
    job_id: str
    source: str
    version: int
    validation_accuracy: float
    test_accuracy: float
    test_samples: int
    cnn_arch: str = ""  # a cnn job's architecture; "": the MLP of sizes
    config: dict | None = None  # the job's configuration (OPTIONAL's config); None: a file without it
    trained: dict | None = None  # {samples, epochs, wall_s} counted down the resumption chain; None: not known

    def network(self) -> model.Network:
        """The network these params are the flat buffer of (faasgd.job.spec.network's, from the file alone)."""
        if self.cnn_arch:
            return model.CNN.of(self.cnn_arch, self.sizes[0], self.sizes[-1])
        return model.MLP(self.sizes, self.activation)


def accuracy_on(shard: data.Shard, weights: np.ndarray, sizes: tuple[int, ...], activation: str,
                net: model.Network | None = None, scratch: np.ndarray | None = None) -> float:
    """Accuracy of `weights` on a shard's rows; raw uint8 rows are scaled a chunk at a time (memory-light), into
    `scratch` when given (eval_scratch: a worker evaluating at every check reuses one buffer, where a new chunk
    each time cost it as much as the scaling itself, in page faults). The one evaluation: workers, the result and
    `faasgd evaluate` all count the same way. `net`: the job's network (faasgd.job.spec.network); default the MLP
    of `sizes` and `activation`."""
    net = net or model.MLP(tuple(sizes), activation)
    rows, correct = len(shard.y), 0.0
    for start in range(0, rows, EVAL_CHUNK):
        stop = min(rows, start + EVAL_CHUNK)
        x = data.scale_rows(shard.x, start, stop, scratch)
        correct += (stop - start) * net.accuracy(weights, x, shard.y[start:stop])
    return correct / rows if rows else 0.0


def eval_scratch(shard: data.Shard) -> np.ndarray | None:
    """A buffer accuracy_on can scale `shard`'s raw rows into, a chunk at a time (None for rows already float32)."""
    if getattr(shard.x, "dtype", None) == np.float32 or not isinstance(shard.x, np.ndarray):
        return None
    return np.empty((EVAL_CHUNK, shard.input_dim), np.float32)


def keep_crossing(store: ParameterStore, job_id: str, worker_id: int, weights: np.ndarray,
                  test_accuracy: Callable[[], float], crossing: dict[str, Any]) -> bool:
    """At a worker's crossing: unless another came first, keep `weights` (exactly the parameters it evaluated)
    as its candidate copy, then claim `done` naming it (set-if-absent: the commit). True if this claim won.
    `crossing`: validation_accuracy, at (store clock), samples, epochs and version at the crossing."""
    if store.get_record(job_id, keys.DONE) is not None:
        return False  # the job's model is kept already: this crossing changes nothing
    name = keys.crossing_copy(worker_id)
    store.keep_copy(job_id, name, weights)
    return mark_done(store, job_id, {**crossing, "worker_id": worker_id, "test_accuracy": float(test_accuracy()),
                                         "model": name})


def read_model(store: ParameterStore, job_id: str) -> ModelFile:
    """The job's model from the store; JobNotFound, or NoModel saying why there is none (yet)."""
    config, meta = read_job(store, job_id)
    records = store.get_records(job_id, [keys.DONE, keys.RESULT])
    done, result = records[keys.DONE], records[keys.RESULT]
    if done is not None:
        params, info = store.read_copy(job_id, done["model"]), {
            "source": SOURCE_CROSSING, "version": done["version"], "validation_accuracy": done["validation_accuracy"],
            "test_accuracy": done["test_accuracy"]}
        if params is None:
            raise StoreError(store.url, f"job {job_id!r}: its model {done['model']!r} is named but missing (evicted?)")
    elif result is None:
        raise NoModel(job_id, "has no model yet: it is still training below its target (its model is kept when "
                              "it reaches the target, or when it ends); try again later")
    else:
        params = store.read_copy(job_id, keys.LAST_PARAMS_COPY)
        if params is None or result.get("final_validation_accuracy") is None:
            raise NoModel(job_id, f"ended ({result.get('state')}) without a model"
                                  + (f": {result['error']}" if result.get("error") else ""))
        info = {"source": SOURCE_LAST_PARAMS, "version": result.get("model_version") or 0,
                "validation_accuracy": result["final_validation_accuracy"],
                "test_accuracy": result["final_test_accuracy"]}
    return ModelFile(params=params, sizes=tuple(int(s) for s in meta["sizes"]), activation=config.activation,
                     dataset=config.dataset, job_id=job_id, source=info["source"], version=int(info["version"]),
                     validation_accuracy=float(info["validation_accuracy"]),
                     test_accuracy=float(info["test_accuracy"]), test_samples=config.test_samples,
                     cnn_arch=config.cnn_arch if config.model == "cnn" else "",
                     config={k: v for k, v in config.to_dict().items() if k not in LOCATION_KEYS},
                     trained=trained_by(meta, result or done))


def to_npz(found: ModelFile) -> bytes:
    """The model as npz bytes (no pickle)."""
    buffer = io.BytesIO()
    np.savez(buffer, format=np.int64(FORMAT), params=np.asarray(found.params, np.float32),
             sizes=np.asarray(found.sizes, np.int64), activation=np.array(found.activation),
             dataset=np.array(found.dataset), job_id=np.array(found.job_id), source=np.array(found.source),
             version=np.int64(found.version), validation_accuracy=np.float64(found.validation_accuracy),
             test_accuracy=np.float64(found.test_accuracy), test_samples=np.int64(found.test_samples),
             **({"cnn_arch": np.array(found.cnn_arch)} if found.cnn_arch else {}),
             **{name: np.array(json.dumps(getattr(found, name), sort_keys=True)) for name in ("config", "trained")
                if getattr(found, name) is not None})
    return buffer.getvalue()


def from_npz(raw: bytes | str) -> ModelFile:
    """A model file (bytes, or a path) read back without pickle, every declared size checked before it is
    inflated (faasgd.job.npz_reader); ConfigError('model') saying what is wrong."""
    arrays = npz_reader.read_arrays(raw, set(FIELDS) | set(OPTIONAL), network_params)
    missing = [name for name in FIELDS if name not in arrays]
    if missing:
        raise ConfigError("model", f"not a faasgd model file: fields {', '.join(missing)} missing")
    scalar = {name: _scalar(name, arrays[name]) for name in FIELDS if name not in ("params", "sizes")}
    if scalar["format"] != FORMAT:
        raise ConfigError("model", f"format {scalar['format']} is not one this faasgd reads ({FORMAT})")
    params, sizes_t = arrays["params"], tuple(int(s) for s in arrays["sizes"])
    arch = _scalar("cnn_arch", arrays["cnn_arch"]) if "cnn_arch" in arrays else ""
    if params.dtype != np.float32 or params.ndim != 1:
        raise ConfigError("model", "params must be float32 (n,) and sizes int64 (layers + 1,) of positive widths")
    if params.size != network_params(arrays["sizes"], arrays.get("cnn_arch")):
        raise ConfigError("model", f"{params.size} params do not fit layer sizes {list(sizes_t)}"
                                   + (f" of cnn_arch {arch}" if arch else ""))
    if scalar["activation"] not in ACTIVATIONS or not known_dataset(scalar["dataset"]):
        raise ConfigError("model", f"unknown activation {scalar['activation']!r} or dataset {scalar['dataset']!r}")
    if not 0 <= scalar["test_samples"] <= MAX_TEST_SAMPLES:
        raise ConfigError("model", f"field test_samples must be in [0, {MAX_TEST_SAMPLES:,}], got "
                                   f"{scalar['test_samples']:,}")
    if not np.isfinite(params).all():
        raise ConfigError("model", "params hold NaN or infinite values")
    found = {name: _json(name, arrays[name]) for name in ("config", "trained") if name in arrays}
    return ModelFile(params=params, sizes=sizes_t, cnn_arch=arch, **found, **{k: scalar[k] for k in (
        "activation", "dataset", "job_id", "source", "version", "validation_accuracy", "test_accuracy", "test_samples")})


def _json(name: str, array: np.ndarray) -> dict:
    """An OPTIONAL JSON field: a JSON object of at most MAX_JSON_CHARS; `trained` with its three counts."""
    text = _scalar(name, array)
    try:
        value = json.loads(text) if len(text) <= MAX_JSON_CHARS else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ConfigError("model", f"field {name} must be a JSON object of at most {MAX_JSON_CHARS:,} characters")
    if name == "trained":
        counts = [value.get(key) for key in ("samples", "epochs", "wall_s")]
        if not all(isinstance(c, (int, float)) and not isinstance(c, bool) and 0 <= c < 1e15 for c in counts):
            raise ConfigError("model", "field trained must hold samples, epochs and wall_s, each a number >= 0")
        value = {"samples": int(counts[0]), "epochs": float(counts[1]), "wall_s": float(counts[2])}
    return value


def network_params(sizes: np.ndarray, cnn_arch: np.ndarray | None) -> int:
    """The parameter count of the network a file's `sizes` (and `cnn_arch`) declare; ConfigError('model') when
    they declare none."""
    if sizes.dtype != np.int64 or sizes.ndim != 1 or len(sizes) < 2 or (sizes < 1).any():
        raise ConfigError("model", "params must be float32 (n,) and sizes int64 (layers + 1,) of positive widths")
    sizes_t = tuple(int(s) for s in sizes)
    arch = "" if cnn_arch is None else _scalar("cnn_arch", cnn_arch)
    if arch and (arch not in model.ARCHS or len(sizes_t) != 2):
        raise ConfigError("model", f"cnn_arch {arch!r} is not one of {', '.join(model.ARCHS)} with sizes (pixels, "
                                   f"classes), got sizes {list(sizes_t)}")
    return model.CNN.of(arch, *sizes_t).param_count if arch else model.param_count(sizes_t)


def known_dataset(name: str) -> bool:
    """Whether `name` is a data set this faasgd knows (an image set, a generated tabular set, libsvm:PATH)."""
    try:
        data.catalog.check_dataset_name(name)
    except ConfigError:
        return False
    return True


def _scalar(name: str, array: np.ndarray) -> Any:
    kinds = {"format": "i", "version": "i", "test_samples": "i", "validation_accuracy": "f", "test_accuracy": "f"}
    kind = kinds.get(name, "U")
    if array.ndim != 0 or array.dtype.kind != kind:
        raise ConfigError("model", f"field {name} must be a {dict(i='integer', f='float', U='unicode')[kind]} scalar, "
                                   f"got {array.dtype} {array.shape}")
    return array.item()


def evaluate_file(found: ModelFile, dataset: str | None = None, test_samples: int | None = None) -> dict[str, Any]:
    """Accuracy of a model file on the first `test_samples` test rows (default: as the job measured) of
    `dataset` (default: its own); the answer says what was measured and what the job reported."""
    dataset = dataset or found.dataset
    if data.is_tabular(dataset) or data.is_tabular(found.dataset):
        raise ConfigError("dataset", "faasgd evaluate runs the image sets' models; a tabular job's accuracies are "
                                     "in its result (docs/how-to/lambdaml.md)")
    input_dim, classes = data.dataset_info(dataset)
    if (found.sizes[0], found.sizes[-1]) != (input_dim, classes):
        raise ConfigError("dataset", f"{dataset} has {input_dim} inputs and {classes} classes; the model takes "
                                     f"{found.sizes[0]} and gives {found.sizes[-1]}")
    rows = found.test_samples if test_samples is None else test_samples
    available = data.count_rows(dataset, "test")  # all its test rows (a generated set: its default size)
    if rows > available:
        raise ConfigError("test_samples", f"{dataset} has {available:,} test rows, fewer than the {rows:,} asked "
                                          "(0: all of them)")
    test = data.load_shard(dataset, "test", 0, 1, rows, scaled=False)
    accuracy = accuracy_on(test, found.params, found.sizes, found.activation, found.network())
    same = dataset == found.dataset and rows == found.test_samples
    return {"job_id": found.job_id, "dataset": dataset, "test_samples": rows, "rows": len(test.y),
            "test_accuracy": accuracy, "reported_test_accuracy": found.test_accuracy if same else None,
            "validation_accuracy": found.validation_accuracy, "source": found.source}


def keep_last_params(store: ParameterStore, job_id: str) -> tuple[np.ndarray, int]:
    """The last global parameters and their version, kept as the model of a job that ended below its target
    (by the worker writing the result, before it)."""
    weights, version = store.authoritative().get_weights(job_id)
    store.keep_copy(job_id, keys.LAST_PARAMS_COPY, weights)
    return weights, version

