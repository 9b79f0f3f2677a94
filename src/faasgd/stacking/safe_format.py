"""The one format objects cross a request body or a store in: npz archives of numeric arrays. Never pickle.

A store anyone on the network could write must not be able to run code in a function, so nothing read
back is ever unpickled, and nothing is trusted before it is checked:
  1. the archive: bytes starting as a zip of stored (uncompressed: no zip bombs) `.npy` members only, their
     total size bounded; a pickle ("\\x80" first) or anything else is refused before numpy sees it;
  2. the arrays: faasgd.job.npz_reader reads them (each .npy header before its data, object arrays refused, never
     more items than the member holds, allow_pickle=False); each name must be one the
     object's kind has, with its exact dtype (little-endian float32/float64/int64, or a short unicode tag)
     and a shape that fits the job (n_features, its rows, trainers_num), values finite;
  3. the model: a forest's children must come after their parent (a walk always ends) and split on a
     feature that exists; a neighbours model's k must lie in [1, rows]; labels must be 0 or 1.
Any failure is UnsafeObject naming the object and what was wrong; nothing of it is used.

Objects (`object` tag inside each archive): dataset, predictions, model, models (a bundle: members
prefixed "<i>."), meta-features, full-model (the base models and "meta." the meta-model).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, fields
from typing import Mapping

import numpy as np

from faasgd.errors import FaasgdError
from faasgd.job import npz_reader
from faasgd.stacking.predictors import Forest, Linear, Logistic, Neighbors, Predictor

FORMAT = "faasgd-stacking/1"
MAX_OBJECT_BYTES = 512 << 20  # an archive's members together; far above any job's objects, far below memory
MAX_NODES = 1 << 22
F4, F8, I8 = np.dtype("<f4"), np.dtype("<f8"), np.dtype("<i8")
KINDS = {"LinearSVR": Linear, "Lasso": Linear, "RandomForestRegressor": Forest, "KNeighborsRegressor": Neighbors,
         "LogisticRegression": Logistic}
DTYPES = {"coef": F8, "intercept": F8, "roots": I8, "left": I8, "right": I8, "feature": I8, "threshold": F8,
          "value": F8, "fit_x": F4, "fit_y": F8, "k": I8}


class UnsafeObject(FaasgdError):
    """Raised when an object read from a body or a store is not what it must be (a pickle, garbage, a wrong
    name, dtype or shape, a malformed model): it is refused whole and nothing of it runs or is used."""

    http_status = 422

    def __init__(self, what: str, detail: str):
        self.field = what
        super().__init__(f"{what}: refused ({detail}); only faasgd's npz format of numeric arrays is read, never pickle")


@dataclass(frozen=True)
class Shape:
    """What the job says an object's arrays must look like."""

    n_features: int  # columns of the dataset
    train_rows: int  # training rows
    test_rows: int  # held-out rows
    trainers: int  # trainers_num: columns of the meta-features, base models of a bundle


# ---- archives -------------------------------------------------------------------------------------
def dumps(kind: str, arrays: Mapping[str, np.ndarray]) -> bytes:
    out = io.BytesIO()
    np.savez(out, format=np.array(FORMAT), object=np.array(kind), **{k: np.asarray(v) for k, v in arrays.items()})
    return out.getvalue()


def loads(raw: bytes, kind: str, what: str) -> dict[str, np.ndarray]:
    """The arrays of an archive of object `kind` (tags removed), after the archive-level checks."""
    if not isinstance(raw, (bytes, bytearray)):
        raise UnsafeObject(what, f"expected bytes, got {type(raw).__name__}")
    if raw[:1] == b"\x80":
        raise UnsafeObject(what, "it is a pickle")
    if raw[:4] != b"PK\x03\x04":
        raise UnsafeObject(what, f"not an npz archive (starts {bytes(raw[:8])!r})")
    def check(members: list[zipfile.ZipInfo]) -> None:
        if any(m.compress_type != zipfile.ZIP_STORED or not m.filename.endswith(".npy") for m in members):
            raise UnsafeObject(what, "members must be uncompressed .npy arrays")
        if sum(m.file_size for m in members) > MAX_OBJECT_BYTES:
            raise UnsafeObject(what, f"members larger than {MAX_OBJECT_BYTES} bytes")
    arrays = npz_reader.read_npz(raw, lambda detail: UnsafeObject(what, detail), check, MAX_OBJECT_BYTES)
    for tag, want in (("format", FORMAT), ("object", kind)):
        found = arrays.pop(tag, None)
        if found is None or found.dtype.kind != "U" or found.shape != () or str(found) != want:
            raise UnsafeObject(what, f"{tag} must be {want!r}, got {None if found is None else str(found)[:40]!r}")
    return arrays


def take(arrays: Mapping[str, np.ndarray], name: str, dtype: np.dtype, shape: tuple, what: str) -> np.ndarray:
    """Array `name` with exactly `dtype` and `shape` (None: any length there), all values finite."""
    array = arrays.get(name)
    if array is None:
        raise UnsafeObject(what, f"{name} missing")
    if array.dtype != dtype:
        raise UnsafeObject(what, f"{name} must be {dtype.str}, got {array.dtype.str}")
    if array.ndim != len(shape) or any(s is not None and s != n for s, n in zip(shape, array.shape)):
        raise UnsafeObject(what, f"{name} must have shape {tuple('*' if s is None else s for s in shape)}, "
                                 f"got {array.shape}")
    if dtype.kind == "f" and not np.isfinite(array).all():
        raise UnsafeObject(what, f"{name} holds a value that is not finite")
    return array


def only(arrays: Mapping[str, np.ndarray], names: set[str], what: str) -> None:
    extra = sorted(set(arrays) - names)
    if extra:
        raise UnsafeObject(what, f"unexpected member {extra[0]!r}")


def labels(array: np.ndarray, name: str, what: str) -> np.ndarray:
    if not np.isin(array, (0, 1)).all():
        raise UnsafeObject(what, f"{name} must hold 0 or 1 only")
    return array


# ---- dataset, predictions, meta-features ------------------------------------------------------------
def dump_dataset(dataset) -> bytes:
    return dumps("dataset", dataset.arrays())


def load_dataset(raw: bytes, shape: Shape, what: str = "dataset"):
    from faasgd.stacking.dataset import Dataset

    arrays = loads(raw, "dataset", what)
    only(arrays, {"x_train", "y_train", "x_test", "y_test"}, what)
    r, t, n = shape.train_rows, shape.test_rows, shape.n_features
    return Dataset(take(arrays, "x_train", F4, (r, n), what), labels(take(arrays, "y_train", I8, (r,), what), "y_train", what),
                   take(arrays, "x_test", F4, (t, n), what), labels(take(arrays, "y_test", I8, (t,), what), "y_test", what))


def dump_predictions(train: np.ndarray, test: np.ndarray) -> bytes:
    return dumps("predictions", {"train": np.asarray(train, F8), "test": np.asarray(test, F8)})


def load_predictions(raw: bytes, shape: Shape, what: str) -> tuple[np.ndarray, np.ndarray]:
    arrays = loads(raw, "predictions", what)
    only(arrays, {"train", "test"}, what)
    return take(arrays, "train", F8, (shape.train_rows,), what), take(arrays, "test", F8, (shape.test_rows,), what)


def dump_meta_features(train: np.ndarray, test: np.ndarray) -> bytes:
    return dumps("meta-features", {"train": np.asarray(train, F8), "test": np.asarray(test, F8)})


def load_meta_features(raw: bytes, shape: Shape, what: str = "meta-features") -> tuple[np.ndarray, np.ndarray]:
    arrays = loads(raw, "meta-features", what)
    only(arrays, {"train", "test"}, what)
    return (take(arrays, "train", F8, (shape.train_rows, shape.trainers), what),
            take(arrays, "test", F8, (shape.test_rows, shape.trainers), what))


# ---- models ---------------------------------------------------------------------------------------
def model_arrays(model: Predictor, prefix: str = "") -> dict[str, np.ndarray]:
    out = {f"{prefix}kind": np.array(model.kind)}
    for f in fields(model):
        if f.name != "kind":
            out[prefix + f.name] = np.asarray(getattr(model, f.name), DTYPES[f.name])
    return out


def read_model(arrays: Mapping[str, np.ndarray], prefix: str, inputs: int, what: str) -> Predictor:
    """The model stored under `prefix`, checked: `inputs` is what it predicts from (n_features, or trainers
    for the meta-model)."""
    tag = arrays.get(prefix + "kind")
    kind = str(tag) if tag is not None and tag.dtype.kind == "U" and tag.shape == () else None
    if kind not in KINDS:
        raise UnsafeObject(what, f"unknown model kind {None if tag is None else str(tag)[:40]!r} "
                                 f"(allowed: {', '.join(KINDS)})")
    cls = KINDS[kind]
    get = lambda name, shape: take(arrays, prefix + name, DTYPES[name], shape, what)  # noqa: E731
    if cls in (Linear, Logistic):
        return cls(kind, get("coef", (inputs,)), get("intercept", ()))
    if cls is Neighbors:
        fit_x = get("fit_x", (None, inputs))
        k = get("k", ())
        if not 1 <= int(k) <= len(fit_x):
            raise UnsafeObject(what, f"k must be in [1, {len(fit_x)}], got {int(k)}")
        return Neighbors(kind, fit_x, get("fit_y", (len(fit_x),)), k)
    roots = get("roots", (None,))
    nodes = len(get("left", (None,)))
    left, right, feature = get("left", (nodes,)), get("right", (nodes,)), get("feature", (nodes,))
    threshold, value = get("threshold", (nodes,)), get("value", (nodes,))
    check_forest(roots, left, right, feature, inputs, what)
    return Forest(kind, roots, left, right, feature, threshold, value)


def check_forest(roots, left, right, feature, inputs: int, what: str) -> None:
    nodes = len(left)
    if not 0 < nodes <= MAX_NODES or len(roots) == 0 or roots[0] != 0 or (np.diff(roots) <= 0).any() \
            or roots[-1] >= nodes:
        raise UnsafeObject(what, f"a forest's roots must start at 0 and increase below its {nodes} nodes")
    ends = np.repeat(np.append(roots[1:], nodes), np.diff(np.append(roots, nodes)))  # each node's tree end
    index = np.arange(nodes)
    leaf = left < 0
    if ((right < 0) != leaf).any() or (left[leaf] != -1).any() or (right[leaf] != -1).any():
        raise UnsafeObject(what, "a node must have two children or none (-1)")
    inner = ~leaf
    if ((left[inner] <= index[inner]) | (left[inner] >= ends[inner]) | (right[inner] <= index[inner])
            | (right[inner] >= ends[inner])).any():
        raise UnsafeObject(what, "a child must come after its parent, inside its tree")
    if ((feature[inner] < 0) | (feature[inner] >= inputs)).any():
        raise UnsafeObject(what, f"a split must be on a feature in [0, {inputs})")


def dump_model(model: Predictor) -> bytes:
    return dumps("model", model_arrays(model))


def load_model(raw: bytes, shape: Shape, what: str) -> Predictor:
    arrays = loads(raw, "model", what)
    model = read_model(arrays, "", shape.n_features, what)
    only(arrays, set(model_arrays(model)), what)
    return model


def dump_models(models: list[Predictor], meta: Predictor | None = None) -> bytes:
    """A bundle: the base models (members "<i>."), with the meta-model ("meta.") for the full model."""
    arrays = {k: v for i, m in enumerate(models) for k, v in model_arrays(m, f"{i}.").items()}
    if meta is not None:
        arrays.update(model_arrays(meta, "meta."))
    return dumps("full-model" if meta is not None else "models", arrays)


def load_models(raw: bytes, shape: Shape, what: str = "models", full: bool = False) -> tuple[list[Predictor], Predictor | None]:
    arrays = loads(raw, "full-model" if full else "models", what)
    models = [read_model(arrays, f"{i}.", shape.n_features, what) for i in range(shape.trainers)]
    meta = read_model(arrays, "meta.", shape.trainers, what) if full else None
    if meta is not None and not isinstance(meta, Logistic):
        raise UnsafeObject(what, f"the meta-model must be LogisticRegression, got {meta.kind}")
    expected = {k for i, m in enumerate(models) for k in model_arrays(m, f"{i}.")}
    only(arrays, expected | (set(model_arrays(meta, "meta.")) if meta is not None else set()), what)
    return models, meta
