"""What a job's config makes of it: its id, its network, how the store adds its pushes, its held-out rows.

Pure functions of a TrainConfig (and the data set's shape): nothing here reads or writes the store.
"""

from __future__ import annotations

import uuid

from faasgd import data, model
from faasgd.config import TrainConfig
from faasgd.store import UpdateRule


def new_job_id() -> str:
    """A fresh job id: short, unique, safe in every store's keys and in URLs."""
    return "j" + uuid.uuid4().hex[:15]


def network_sizes(config: TrainConfig) -> tuple[int, ...]:
    """Layer sizes of the job's network, input and classes taken from its dataset. A linear model (lr, svm) is
    (features, k), k = 1 for two classes: its flat layout (faasgd.lambdaml.convex.linear) is the MLP's without hidden layers."""
    input_dim, n_classes = data.dataset_info(config.dataset)
    if config.model == "kmeans":  # nearest-centroid assignment as a linear model (lambdaml/sync_worker.py)
        return (input_dim, config.n_clusters or n_classes)
    if config.model == "cnn":  # its layers are the architecture's (network below): (pixels, classes) here
        return (input_dim, n_classes)
    if config.model != "mlp":
        return (input_dim, 1 if n_classes == 2 else n_classes)
    return model.layer_sizes(input_dim, config.hidden_sizes, n_classes)


def network(config: TrainConfig) -> model.Network:
    """The job's network (faasgd.model.network): the cnn of its cnn_arch, else the MLP of its sizes (a linear
    model's (features, k) layout is the MLP's without hidden layers)."""
    sizes = network_sizes(config)
    if config.model == "cnn":
        return model.CNN.of(config.cnn_arch, *sizes)
    return model.MLP(sizes, config.activation, config.dropout)


def update_rule(config: TrainConfig) -> UpdateRule:
    """How the store adds the job's pushes: the config's rule, with the workers and step it scales by."""
    return UpdateRule(config.update_rule, workers=config.number_of_workers, learning_rate=config.learning_rate)


def holdout(config: TrainConfig) -> tuple[int, int]:
    """(training rows, validation rows) of the job: the validation rows are held out of the training split's
    end (data/shard.py). ConfigError naming validation_samples when too few training rows are left."""
    rows = data.count_rows(config.dataset, "train", config.train_samples)
    held = data.validation_rows(rows, config.validation_samples, config.number_of_workers,
                                data.row_group(config.dataset))  # an augmented set: whole source images
    return rows - held, held
