"""ADMM and KMeans as synchronous rounds over an Exchange (LambdaML's convex algorithms through a store).

    state = admm_state(n_features, n_classes)                  # RoundState: params = [z | u_i | x_i]
    out = admm_round(state, (X, y), lr_model, exchange, AdmmSettings(rho=0.1, local_steps=10, lr=0.5, l2=1e-2), w_i)
    z = admm_z(out.state)                                      # the consensus model, the same bits on every worker

    state = RoundState(kmeans.init(X, k, rng))                 # params = the flat float32 centroids
    out = kmeans_round(state, (X, y), exchange)                # exchange.config.op must be "sum"

Both are one round of the rounds package: a pure step from a RoundState (a flat float32 vector + the round
number, what a worker's checkpoint holds) through one exchange.all_reduce, returning a RoundOutcome with that
round's RoundStats. A round re-run from the same state does the same float32 work and re-enters the same
exchange round (exchange.py), so it ends in the same bits: one round per invocation equals a loop.

ADMM (faasgd.lambdaml.convex.admm's math, consensus_round's shape). The state is [z | u_i | x_i], three vectors of
the model's length: z the consensus, u_i this worker's scaled dual, x_i its local model (kept because the
x-update starts from it, as run_admm does; it cannot be rebuilt from z and u). A round: worker_update
(x_i, contribution x_i + u_i), the contributions averaged over the exchange (op "mean"), z' = the mean with
its weights shrunk by rho / (rho + l2) (merge_z's prox), u_i' = u_i + x_i - z'. The exchange's mean and
merge_z's mean are both float64 sums in worker order; the exchange rounds the mean to float32 before the
shrink, merge_z after it, so z agrees with run_admm within float32 rounding, not bit for bit.

KMeans (faasgd.lambdaml.convex.kmeans): the state is the centroids; each worker packs its shard's Partial (sums,
counts, inertia) as float32 and the exchange SUMS them (op "sum": counts stay exact integers to 2^24 rows);
the new centroids are kmeans.merge of the summed partial (a centroid no row chose stays). The partials are
computed in float64 and rounded once to travel, the sum is float64 rounded once (exchange.py): the
centroids carry about 1e-7 relative error, against the 1e-6 the scikit-learn oracle allows.

Loss: the outcome's `loss` is the GLOBAL objective at the state the round started from, the same on every
worker, carried by the merge itself (one extra float in the vector): ADMM appends weight_i x its shard's
objective at z (the mean over workers is the objective over all rows, l2 included), KMeans' packed partial
ends with the shard's inertia (the sum is the data set's inertia). So round r reports the model of round r - 1,
and a caller can stop every worker on the same round by comparing it with a target.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from faasgd.checks import positive_number
from faasgd.lambdaml.convex import admm, kmeans, linear
from faasgd.lambdaml.convex.admm import AdmmSettings
from faasgd.errors import ConfigError
from faasgd.lambdaml.rounds.algorithms import RoundOutcome, RoundState, check_params, consensus_round
from faasgd.lambdaml.rounds.exchange import Exchange

Shard = tuple  # (X dense ndarray or CSR, y labels); KMeans ignores y


def admm_state(n_features: int, n_classes: int = 2, model: ModuleType = linear) -> RoundState:
    """Round 0 of ADMM: z = x_i = the model's zero vector, u_i = 0, packed as [z | u_i | x_i]."""
    z = model.init(n_features, n_classes)
    return RoundState(np.concatenate([z, np.zeros_like(z), z]).astype(np.float32))


def admm_parts(state: RoundState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(z, u_i, x_i) of an ADMM state (views into its params)."""
    params = check_params(state.params)
    if params.size % 3 or params.size == 0:
        raise ConfigError("params", f"an ADMM state is [z | u | x], three equal vectors; got {params.size} numbers")
    n = params.size // 3
    return params[:n], params[n:2 * n], params[2 * n:]


def admm_z(state: RoundState) -> np.ndarray:
    """The consensus model z of an ADMM state (a copy)."""
    return admm_parts(state)[0].copy()


def admm_round(state: RoundState, shard: Shard, model: ModuleType, exchange: Exchange, settings: AdmmSettings,
               weight: float = 1.0) -> RoundOutcome:
    """One consensus-ADMM round for lr or svm; `weight` is N n_i / n (1 with equal shards), as run_admm's."""
    rho, l2 = settings.rho, linear.check_l2(settings.l2)
    positive_number(weight, "weight", must="a finite number > 0 (N n_i / n)", numpy=True)
    if exchange.config.op != "mean":
        raise ConfigError("op", f"ADMM averages the contributions: the exchange's op must be 'mean', "
                                f"got {exchange.config.op!r}")
    X, y = shard
    n_features = linear.as_inputs(X).shape[1]
    z, u, x = admm_parts(state)
    kept = {}

    def contribute(params: np.ndarray, r: int) -> tuple[float, np.ndarray]:
        objective = float(model.loss_and_grad(z, X, y, l2)[0])
        kept["x"], contribution = admm.worker_update(model, x, z, u, X, y, settings,
                                                     np.float64(weight))  # run_admm's float64 weight
        return objective, np.append(contribution, np.float32(weight * objective)).astype(np.float32)

    def combine(params: np.ndarray, vector: np.ndarray, merged: np.ndarray, r: int) -> np.ndarray:
        new_z = shrink(merged[:-1], rho, l2, n_features)
        new_x, kept["objective"] = kept["x"], float(merged[-1])
        return np.concatenate([new_z, admm.update_dual(u, new_x, new_z), new_x]).astype(np.float32)

    outcome = consensus_round(state, exchange, contribute, combine)
    return RoundOutcome(outcome.state, kept["objective"], outcome.stats)


def kmeans_round(state: RoundState, shard: Shard, exchange: Exchange) -> RoundOutcome:
    """One Lloyd iteration over every worker's shard; `loss` is the data set's inertia at the state's centroids."""
    if exchange.config.op != "sum":
        raise ConfigError("op", f"KMeans sums the partials: the exchange's op must be 'sum', got {exchange.config.op!r}")
    X = shard[0] if isinstance(shard, tuple) else shard
    n_features = linear.as_inputs(X).shape[1]
    k = kmeans.as_centroids(check_params(state.params), n_features).shape[0]
    kept = {}

    def contribute(centroids: np.ndarray, r: int) -> tuple[float, np.ndarray]:
        part = kmeans.partial(centroids, X)
        return part.inertia, kmeans.pack(part).astype(np.float32)

    def combine(centroids: np.ndarray, vector: np.ndarray, merged: np.ndarray, r: int) -> np.ndarray:
        total = kmeans.unpack(merged.astype(np.float64), k, n_features)
        kept["inertia"] = total.inertia
        return kmeans.merge([total], centroids)

    outcome = consensus_round(state, exchange, contribute, combine)
    return RoundOutcome(outcome.state, kept["inertia"], outcome.stats)


def shrink(mean: np.ndarray, rho: float, l2: float, n_features: int) -> np.ndarray:
    """merge_z's prox on an already averaged vector: the weights times rho / (rho + l2), the biases kept."""
    z = mean.astype(np.float64)
    if l2:
        W, _ = linear.split(z, n_features)
        W *= rho / (rho + l2)
    return z.astype(np.float32)

