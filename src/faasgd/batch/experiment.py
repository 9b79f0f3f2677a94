"""`./test.sh --mlflow [URI]`: the batch as one MLflow experiment (faasgd.tracking.mlflow_batch writes it).

The URI is the flag's, else MLFLOW_TRACKING_URI; it is checked with the other flags, before anything is written:
a flag without either, a stacking matrix (its runs have no job curves to log) or the extra `track` missing is a
ConfigError naming `--mlflow`. Every value goes through the batch's Redactor first. A tracking server or backend
that fails mid-batch is said once; the batch goes on without it (its folder and results database have every run)
and exits 1 at its end.
"""

from __future__ import annotations

import os
from typing import Callable

from faasgd.batch.matrix import Configuration, Matrix
from faasgd.batch.redact import Redactor
from faasgd.errors import ConfigError


def tracking_uri(flag: str | None, workload: str) -> str | None:
    """The tracking URI asked for (None: no --mlflow), checked."""
    if flag is None:
        return None
    uri = flag or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise ConfigError("--mlflow", "needs a tracking URI: give one, or set MLFLOW_TRACKING_URI")
    if workload != "emnist":
        raise ConfigError("--mlflow", f"tracks emnist batches (each round's job and its curves); this matrix's "
                                      f"workload is {workload}")
    try:
        import faasgd.tracking.mlflow_batch  # noqa: F401 (the extra's presence, before anything is written)
    except ImportError as error:
        raise ConfigError("--mlflow", f"needs the extra track (pip install 'faasgd[track]'): {error}") from None
    return uri


class Experiment:
    """The batch's experiment while the batch runs, or nothing after its first failure."""

    def __init__(self, uri: str, matrix: Matrix, meta: dict, redactor: Redactor, say: Callable[..., None]):
        from faasgd.tracking.mlflow_batch import BatchExperiment

        self.redactor, self.say, self.failed = redactor, say, False
        self.batch = None
        tags = {key: str(value) for key, value in redactor.value(meta).items()}
        self.guard(lambda: setattr(self, "batch", BatchExperiment(uri, matrix.name, meta["started_at"], tags)))
        if self.batch is not None:
            say(f"MLflow: experiment {self.batch.name!r} at {redactor.text(uri)}")

    def guard(self, write: Callable[[], object]) -> None:
        if self.failed:
            return
        try:
            write()
        except Exception as error:  # noqa: BLE001 (a server gone, a full disk: MLflow's own errors, named)
            self.failed, self.batch = True, None
            self.say(f"test.sh: --mlflow: {type(error).__name__}: {self.redactor.text(str(error))[:500]}; the batch "
                     f"goes on without it", error=True)

    def on_job(self, configuration: Configuration, record: dict, status: dict | None) -> None:
        from faasgd.tracking.mlflow_batch import Round

        found = Round(config_id=configuration.config_id, label=configuration.label,
                      values=self.redactor.value(configuration.values), round_number=int(record["round"]),
                      status=self.redactor.value(status), record=self.redactor.value(record))
        self.guard(lambda: self.batch.round(found))

    def finish(self) -> None:
        self.guard(lambda: self.batch.finish())
