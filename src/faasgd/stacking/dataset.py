"""The job's dataset: vSwarm's seeded classification set, split into training and held-out rows.

make_classification(n_samples, n_features, n_redundant=0, n_clusters_per_class=2, weights=[0.9, 0.1],
flip_y=0.1, random_state=seed), as vSwarm's driver makes it; features as float32 (what travels), labels
0/1. The held-out rows (test_fraction, stratified, the same seed) give every score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from faasgd.stacking.config import StackingConfig, held_out_rows


@dataclass(frozen=True)
class Dataset:
    x_train: np.ndarray  # (train rows, n_features) float32
    y_train: np.ndarray  # (train rows,) int64, 0 or 1
    x_test: np.ndarray  # (held-out rows, n_features) float32
    y_test: np.ndarray  # (held-out rows,) int64

    def arrays(self) -> dict[str, np.ndarray]:
        return {"x_train": self.x_train, "y_train": self.y_train, "x_test": self.x_test, "y_test": self.y_test}


def make_dataset(config: StackingConfig) -> Dataset:
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    x, y = make_classification(config.n_samples, config.n_features, n_redundant=0, n_clusters_per_class=2,
                               weights=[0.9, 0.1], flip_y=0.1, random_state=config.seed)
    x_train, x_test, y_train, y_test = train_test_split(x.astype(np.float32), y.astype(np.int64),
                                                        test_size=held_out_rows(config), stratify=y,
                                                        random_state=config.seed)
    return Dataset(x_train, y_train, x_test, y_test)


def accuracy(predictions: np.ndarray, labels: np.ndarray) -> float:
    """Classification accuracy of a regressor's predictions thresholded at 0.5 (or of 0/1 class predictions)."""
    return float(np.mean((np.asarray(predictions) >= 0.5).astype(np.int64) == labels))
