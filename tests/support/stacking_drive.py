"""A stacking job driven in this process: the driver's calls go straight to the flow's functions."""

from faasgd.stacking import flow

SMALL = {"n_samples": 120, "n_features": 16, "seed": 3}  # a job that fits in well under a second


def in_process(store, job_id, config):
    """The driver's `call`: each function's work run here, on `store`."""
    def call(function, body):
        if function == flow.TRAINER:
            return flow.train(store, job_id, config, body["trainer_id"], body["dataset"])
        if function == flow.REDUCER:
            return flow.reduce(store, job_id, config, body["trainers"])
        return flow.metatrain(store, job_id, config, body)
    return call
