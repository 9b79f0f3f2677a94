"""The data sets faasgd knows, their shapes, and where each one's rows come from."""

from faasgd.data import augmented, emnist_source, fashion, synthetic, tabular
from faasgd.errors import ConfigError

DATASETS: tuple[str, ...] = (
    "fashion-mnist",
    "emnist-balanced",
    "emnist-bymerge",
    "emnist-byclass",
    "emnist-digits",
    "emnist-letters",
    "emnist-mnist",
    "synthetic",
    *augmented.NAMES,  # fashion-mnist-x{2,4,8,16,21}: Fashion-MNIST augmented F-fold per shard (data/augmented.py)
)
TABULAR: tuple[str, ...] = tuple(tabular.GENERATED) + ("libsvm:PATH",)  # lr/svm only (data/tabular.py)
is_tabular = tabular.is_tabular
SPLITS: tuple[str, ...] = ("train", "test")
INPUT_DIM = 784  # every data set has 28 x 28 images
N_CLASSES = {
    "fashion-mnist": 10,
    "emnist-balanced": 47,
    "emnist-bymerge": 47,
    "emnist-byclass": 62,
    "emnist-digits": 10,
    "emnist-letters": 27,  # labels 1..26; class 0 is never used
    "emnist-mnist": 10,
    "synthetic": synthetic.N_CLASSES,
    **{name: 10 for name in augmented.NAMES},
}


def check_dataset(dataset: str) -> None:
    """Raise ConfigError naming the field unless `dataset` is one of DATASETS or TABULAR."""
    check_dataset_name(dataset)


def check_dataset_name(value) -> str:
    """The data set's name (stripped) if it is one of DATASETS or TABULAR; ConfigError('dataset') otherwise."""
    name = value.strip() if isinstance(value, str) else value
    if isinstance(name, str) and name.startswith(tabular.LIBSVM_PREFIX):
        return tabular.check_libsvm_name(name)
    if not isinstance(name, str) or (name not in DATASETS and name not in tabular.GENERATED):
        raise ConfigError("dataset", f"must be one of {', '.join(DATASETS + TABULAR)}, got {value!r}")
    return name


def check_split(split: str) -> None:
    """Raise ConfigError naming the field unless `split` is train or test."""
    if split not in SPLITS:
        raise ConfigError("split", f"must be one of {', '.join(SPLITS)}, got {split!r}")


def dataset_info(dataset: str) -> tuple[int, int]:
    """Return (input_dim, n_classes) of `dataset` without reading any data."""
    check_dataset(dataset)
    if is_tabular(dataset):
        return tabular.info(dataset)
    return INPUT_DIM, N_CLASSES[dataset]


def count_rows(dataset: str, split: str, limit: int = 0, data_dir: str | None = None) -> int:
    """Return the rows of the split after `limit` (files: the first `limit` rows at most; synthetic: exactly)."""
    if dataset == "synthetic":
        return synthetic.count_rows(split, limit)
    if is_tabular(dataset):
        return tabular.count_rows(dataset, split, limit)
    if dataset in augmented.NAMES:
        return augmented_rows(row_group(dataset, split), fashion.count_rows(split, data_dir), limit)
    if dataset == "fashion-mnist":
        total = fashion.count_rows(split, data_dir)
    else:
        total = emnist_source.count_rows(emnist_variant(dataset), split)
    return min(total, limit) if limit > 0 else total


def iter_rows(dataset: str, split: str, start: int, stop: int, data_dir: str | None = None):
    """Yield (uint8 images (k, ...), labels (k,)) chunks of rows [start, stop): memory of one chunk at a time."""
    if dataset == "synthetic":
        return synthetic.iter_split_rows(split, start, stop)
    if dataset == "fashion-mnist":
        return fashion.iter_split_rows(split, start, stop, data_dir)
    if dataset in augmented.NAMES:
        return augmented.iter_split_rows(augmented.factor(dataset), split, start, stop, data_dir)
    return emnist_source.iter_split_rows(emnist_variant(dataset), split, start, stop)


def emnist_variant(dataset: str) -> str:
    """Return the `emnist` package's name of an EMNIST data set, e.g. "digits" for "emnist-digits"."""
    return dataset.removeprefix("emnist-")


def row_group(dataset: str, split: str = "train") -> int:
    """Rows that come from one source image (an augmented set's factor; else 1): the split's rows after `limit`
    and its held-out validation rows are whole groups, so no copy of a validation image trains."""
    return augmented.factor(dataset) if split == "train" else 1


def augmented_rows(group: int, sources: int, limit: int) -> int:
    """Rows of an augmented split: `group` per source; `limit` counts rows, rounded down to whole sources (one
    source at least)."""
    total = group * sources
    return min(total, max(group, limit - limit % group)) if limit > 0 else total
