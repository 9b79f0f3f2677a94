"""The four functions' work, and the driver's orchestration of a job, timed per phase.

    drive       the driver: make and put the dataset (upload), call the trainers at once or one after
                another (train), the reducer (reduce), the metatrainer (meta-train); the job's result
    train       one trainer: fit models[trainer_id % len(models)], keep its model and predictions
    reduce      the reducer: read every trainer's model and predictions (checked), stack the predictions
    metatrain   the metatrainer: fit the meta-model on the stacked predictions, score everything on the
                held-out rows, keep the full model (base models + meta-model)
How a call reaches a function (`Call`: the gateway, or in-process in tests) is the caller's; every
object a function reads goes through safe_format. The driver checks an inline job's bodies against the
receiving functions' max_request_bytes before anything is written (a 413 naming `transfer`).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from faasgd.errors import FaasgdError, TooLarge
from faasgd.stacking import models, predictors, records, safe_format
from faasgd.stacking.calls import Call, Retrying
from faasgd.stacking.config import StackingConfig, held_out_rows
from faasgd.stacking.dataset import accuracy, make_dataset
from faasgd.stacking.safe_format import Shape, UnsafeObject
from faasgd.stacking.transfer import B64_FACTOR, mover
from faasgd.stacking.record_store import RecordStore
from faasgd.store import keys

TRAINER, REDUCER, METATRAINER = "stacking-trainer", "stacking-reducer", "stacking-metatrainer"
PHASES = ("upload_s", "train_s", "reduce_s", "meta_train_s")
MEASURES = ("ensemble_score", "best_base_score", "base_scores", *PHASES, "total_s", "call_retries")  # a result, flat
BODY_SLACK = 4096  # the JSON around the objects


def shape_of(config: StackingConfig) -> Shape:
    test = held_out_rows(config)
    return Shape(config.n_features, config.n_samples - test, test, config.trainers_num)


def model_of(config: StackingConfig, trainer_id: int) -> models.ModelSpec:
    return config.models[trainer_id % len(config.models)]


def inline_bodies(config: StackingConfig) -> dict[str, int]:
    """Bytes of the largest request body each function gets when objects travel inline (an upper bound)."""
    s = shape_of(config)
    dataset = config.n_samples * (config.n_features * 4 + 8)
    predictions = config.n_samples * 8

    def model_bytes(spec: models.ModelSpec) -> int:
        if spec.name == "KNeighborsRegressor":
            return s.train_rows * (config.n_features * 4 + 8)
        if spec.name == "RandomForestRegressor":
            nodes = min(2 ** (spec.params["max_depth"] + 1), 2 * s.train_rows) * spec.params["n_estimators"]
            return nodes * 48
        return config.n_features * 8
    all_models = sum(model_bytes(model_of(config, i)) for i in range(config.trainers_num))
    raw = {TRAINER: dataset, REDUCER: all_models + config.trainers_num * predictions,
           METATRAINER: dataset + all_models + config.trainers_num * predictions}
    return {name: int(size * B64_FACTOR) + BODY_SLACK + 2048 * config.trainers_num for name, size in raw.items()}


def check_inline(config: StackingConfig, limit: int) -> None:
    """413 on `transfer` when an inline job would send a body over `limit` (max_request_bytes)."""
    if config.transfer != "inline":
        return
    sizes = inline_bodies(config)
    function = max(sizes, key=sizes.get)
    if sizes[function] > limit:
        raise TooLarge("transfer", f"inline bodies would reach {sizes[function]:,} bytes ({function}'s request), "
                                   f"over max_request_bytes={limit:,} of the stacking functions; use transfer=store, "
                                   f"or fewer n_samples, n_features or trainers_num")


# ---- the functions' work ----------------------------------------------------------------------------
def train(store: RecordStore, job_id: str, config: StackingConfig, trainer_id: int, dataset_value: Any) -> dict:
    shape, move = shape_of(config), mover(config.transfer, store, job_id)
    data = safe_format.load_dataset(move.get(dataset_value, keys.DATASET_OBJECT), shape)
    spec = model_of(config, trainer_id)
    estimator, out_of_fold = models.fit_base(spec, config.seed, config.cv_folds, data.x_train, data.y_train)
    model = predictors.from_estimator(estimator)
    test = model.predict(data.x_test)  # from the arrays that travel: what the metatrainer will check
    return {"trainer_id": trainer_id, "model_name": spec.name,
            "model": move.put(keys.trainer_model_name(trainer_id), safe_format.dump_model(model)),
            "predictions": move.put(keys.trainer_predictions_name(trainer_id),
                                    safe_format.dump_predictions(out_of_fold, test))}


def reduce(store: RecordStore, job_id: str, config: StackingConfig, trainers: list[dict]) -> dict:
    shape, move = shape_of(config), mover(config.transfer, store, job_id)
    base, train_columns, test_columns = [], [], []
    for i, answer in enumerate(trainers):
        model_name, predictions_name = keys.trainer_model_name(i), keys.trainer_predictions_name(i)
        base.append(safe_format.load_model(move.get(answer.get("model"), model_name), shape, model_name))
        oof, test = safe_format.load_predictions(move.get(answer.get("predictions"), predictions_name), shape,
                                                 predictions_name)
        train_columns.append(oof)
        test_columns.append(test)
    meta_features = safe_format.dump_meta_features(np.column_stack(train_columns), np.column_stack(test_columns))
    return {"models": move.put(keys.MODELS_OBJECT, safe_format.dump_models(base)),
            "meta_features": move.put(keys.META_FEATURES_OBJECT, meta_features)}


def metatrain(store: RecordStore, job_id: str, config: StackingConfig, body: dict) -> dict:
    shape, move = shape_of(config), mover(config.transfer, store, job_id)
    data = safe_format.load_dataset(move.get(body.get("dataset"), keys.DATASET_OBJECT), shape)
    meta_train, meta_test = safe_format.load_meta_features(move.get(body.get("meta_features"),
                                                                    keys.META_FEATURES_OBJECT), shape)
    base, _ = safe_format.load_models(move.get(body.get("models"), keys.MODELS_OBJECT), shape)
    for i, model in enumerate(base):  # the models that travelled must give the predictions that travelled
        if not np.allclose(model.predict(data.x_test), meta_test[:, i], rtol=1e-6, atol=1e-6):
            raise UnsafeObject("models", f"model {i} does not give the held-out predictions stored with it")
    meta = predictors.from_estimator(models.fit_meta(config.seed, meta_train, data.y_train, config.meta_c))
    full = move.put(keys.FULL_MODEL_OBJECT, safe_format.dump_models(base, meta))
    return {"base_scores": [accuracy(meta_test[:, i], data.y_test) for i in range(shape.trainers)],
            "ensemble_score": accuracy(meta.predict(meta_test), data.y_test), "full_model": full}


# ---- the driver -------------------------------------------------------------------------------------
def drive(store: RecordStore, job_id: str, config: StackingConfig, call: Call,
          clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> dict:
    """Run the job's four phases; the result (also written to the job's state). Any exception fails the job
    (its type and message as the reason) and is raised again.
    A call whose answer was lost is made again (calls.py); a job failed meanwhile by its deadline stays failed."""
    phases: dict[str, float] = {}
    started = clock()
    call = Retrying(call, config.call_timeout_s, sleep=sleep, clock=clock)
    try:
        records.set_state(store, job_id, phase="upload")
        move = mover(config.transfer, store, job_id)
        dataset = move.put(keys.DATASET_OBJECT, safe_format.dump_dataset(make_dataset(config)))
        phases["upload_s"] = clock() - started

        records.set_state(store, job_id, phase="train")
        mark = clock()
        bodies = [{"job_id": job_id, "trainer_id": i, "store": config.store, "dataset": dataset}
                  for i in range(config.trainers_num)]
        if config.concurrent_training:
            with ThreadPoolExecutor(max_workers=config.trainers_num) as pool:
                trained = list(pool.map(lambda body: call(TRAINER, body), bodies))
        else:
            trained = [call(TRAINER, body) for body in bodies]
        phases["train_s"] = clock() - mark

        records.set_state(store, job_id, phase="reduce")
        mark = clock()
        reduced = call(REDUCER, {"job_id": job_id, "store": config.store,
                                 "trainers": [{"model": t.get("model"), "predictions": t.get("predictions")}
                                              for t in trained]})
        phases["reduce_s"] = clock() - mark

        records.set_state(store, job_id, phase="meta-train")
        mark = clock()
        final = call(METATRAINER, {"job_id": job_id, "store": config.store, "dataset": dataset,
                                   "models": reduced.get("models"), "meta_features": reduced.get("meta_features")})
        phases["meta_train_s"] = clock() - mark
    except Exception as error:  # MemoryError and any bug too: the job ends failed, naming why, never stays running
        reason = str(error) if isinstance(error, FaasgdError) else f"{type(error).__name__}: {error}"
        records.finish(store, job_id, state="failed", error=reason[:1000], phases=phases, call_retries=call.retries)
        raise
    base_scores = [float(s) for s in final["base_scores"]]
    result = {"state": "done", "phase": "done", "transfer": config.transfer, "trainers_num": config.trainers_num,
              "concurrent_training": config.concurrent_training,
              "models": [model_of(config, i).name for i in range(config.trainers_num)],
              "base_scores": base_scores, "best_base_score": max(base_scores),
              "ensemble_score": float(final["ensemble_score"]),
              "phases": {k: round(v, 4) for k, v in phases.items()}, "total_s": round(clock() - started, 4),
              "call_retries": call.retries}
    ended = records.finish(store, job_id, **result)
    if ended.get("state") != "done":  # failed by its deadline while the calls ran: it stays failed
        raise FaasgdError(f"job {job_id}: {ended.get('error', 'ended before its driver finished')}")
    return result
