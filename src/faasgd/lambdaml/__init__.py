"""LambdaML's synchronous algorithms, the second workload: grad_avg, model_avg, ADMM and KMeans in rounds.

    sync_worker.py      SyncWorker (a faasgd.worker Worker) and load_sync_worker, its loader
    sync_checkpoint.py  a worker's state after a round, as one blob
    rounds/             one round's all_reduce through a blob space and the algorithms as resumable rounds
    convex/             the convex models (lr, svm, kmeans, admm) as pure numpy functions

The rounds move objects through a blob space: the job's store, or the function's S3 space (faasgd.channels, a
shared layer: stacking moves objects through it too). It imports the shared layers and no other workload.
"""
