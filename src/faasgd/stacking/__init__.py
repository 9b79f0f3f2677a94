"""Stacking ensemble training (vSwarm's stacking-training) over the same template, runtime and stores.

A driver creates a job and puts a seeded classification set where the trainers can read it; N trainers
each fit one base regressor (models[i % len(models)]) and keep its model and its predictions (out-of-fold
on the training rows, plain on the held-out rows); a reducer collects them and stacks the predictions;
a metatrainer fits the meta-model (LogisticRegression) on the stacked predictions. Scores are accuracy on
the held-out rows (a regressor's prediction thresholded at 0.5): `base_scores`, `ensemble_score`.

    config       StackingConfig: one frozen dataclass, parsed once per request (hostile-input rules)
    dataset      the seeded set (scikit-learn's make_classification), split into training and held-out rows
    models       the base models and the meta-model: fitting, with scikit-learn
    predictors   fitted models as plain numpy arrays and the functions that predict with them
    safe_format  the only way objects cross a body or a store: npz of numeric arrays, decoded with every
                 name, dtype and shape checked against the job; a pickle, a wrong shape or garbage is refused
    transfer     how objects move between the functions: inline (request bodies), store (chunked blobs) or s3
    flow         the four functions' work and the driver's orchestration, timed per phase
    records      the job's records in the store (config, state, result)
    record_store what the workload asks of a store (RecordStore: records, objects, the clock; BlobStore)

scikit-learn is the extra `stacking` (and the stacking functions' requirements.txt): it is imported only
where a model is generated or fitted, so the core stays importable without it.
"""
