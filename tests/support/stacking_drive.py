"""A stacking job driven in this process: the driver's calls go straight to the flow's functions; and the
scores scikit-learn alone gives a job, the oracle the tests that run the functions compare with."""

from faasgd.stacking import flow
from faasgd.stacking.dataset import accuracy, make_dataset
from faasgd.stacking.models import fit_base, fit_meta

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


def sklearn_scores(config):
    """scores(trainers) -> (base scores, ensemble score) of `config`'s job with `trainers` trainers, from
    scikit-learn alone (its own predict, in this process); each of config.models is fit once."""
    data = make_dataset(config)
    kinds = len(config.models)  # trainer i fits models[i % kinds], from the same seed: the same fit
    fitted = [fit_base(flow.model_of(config, i), config.seed, config.cv_folds, data.x_train, data.y_train)
              for i in range(kinds)]

    def scores(trainers: int):
        chosen = [fitted[i % kinds] for i in range(trainers)]
        test = [estimator.predict(data.x_test) for estimator, _ in chosen]
        meta = fit_meta(config.seed, [[*row] for row in zip(*(oof for _, oof in chosen))], data.y_train)
        ensemble = float((meta.predict([[*row] for row in zip(*test)]) == data.y_test).mean())
        return [accuracy(t, data.y_test) for t in test], ensemble
    return scores
