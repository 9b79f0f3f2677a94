"""Predict a run's resource figures and time to target from its configuration, learnt from the results database.

Driple predicts these figures from the training job's graph with a GNN; our graphs are all MLPs, so the graph
is summarised by what drives the figures (features below), and each target is a ridge regression on the log
of the target (the figures are products of rates and sizes: log-linear in them):
    log y = w . features(config),   features: 1, log parameters (the model's graph), log batch_size,
    log workers, log n_fetch, log n_push, log (1/n_fetch + 1/n_push), one-hots of the store, the update
    rule, communication and invocation mode, and the second-order terms of log workers, log period (the mean of
    log n_fetch and log n_push) and log batch_size: w^2, w p, p^2, b p, w b (a response surface: on a 2-core
    machine four workers are not twice two, and the bytes per sample fall with batch x period).
FLOPs per step (6 x batch x parameters), bytes per push (4 x parameters) and store bytes per step
(4 x parameters x (1/n_fetch + 1/n_push)) are products of these, so their logs are sums of the features:
a model log-linear in them is one in the features (listing them too would only make the fit singular).
Targets: the 12 Driple figures of profile/figures.py, the totals cpu_s (the workers' CPU-seconds, counted:
faasgd.job.result; runs recorded before it was counted hold the sampler's integral over the workers' threads),
tx_bytes, rx_bytes and time_to_target_s;
a run without a value for a target is left out of that target's fit, and so is a time measured on a clock too
coarse for it: every duration of a job is on the store's clock, Memcached's in whole seconds, so a time under
MIN_CLOCK_TICKS of its store's tick is no measurement (a 0.4 s run reads 0 or 1 s).

The time to target is not fitted as one log-linear figure: it is a sum, and a log-linear model of a sum is off
where one term dominates. A job spends start_s before its first worker trains (invocations, loading the data:
0.2-0.5 s, most of a short run) and then trains at samples_per_s until samples_to_target:
    time_to_target_s = start_s + samples_to_target / samples_per_s,
and each of the three PARTS is a log-linear figure of its own (a product of rates and sizes, as above), fitted
on every run that measures it: samples_to_target (a count, on no clock) on every run that reached the target,
whatever its store; samples_per_s and start_s (wall_s - samples / samples_per_s) on every run long enough for
its store's clock, reached or not (a run that missed the target still says how fast that configuration trains).

Validation (`validate`): leave one configuration out (every round of it), predict it from the others; the
error is the mean absolute percentage error (MAPE) per target over the held-out runs. `round_spread` is the
noise floor beside it: each run predicted by the other rounds of its own configuration.

Transfer (Driple's transfer learning, here for a linear model): a predictor fitted on one setting (a store,
a machine, a model family: any filter of runs) is adapted to another with a few runs there. A few runs cannot
fit twenty weights (each run is ~30% noise: `round_spread`), but they can say by how much the new setting
scales a figure: first the intercept moves by the mean log residual of the target runs, shrunk as if one more
run had residual 0 (TRANSFER_PRIOR_RUNS); then every weight is fitted by ridge regression *towards those
weights*, min |y - X w|^2 + lam |w - w_shifted|^2 with a strong lam (TRANSFER_RIDGE), so with no runs it is the
source predictor, with a few the source rescaled, and with many the target's own. `transfer_curve` says how
the error falls with the number of target runs used (averaged over random draws of them).

Intervals (`Predictor.interval`): a prediction interval for one new run, from the fit's residuals. Ridge is the
mean of a Bayesian linear regression with the prior N(0, s^2 / lam) on the weights (N(shifted, ...) adapting), so
in log space a run lies in x.w +- t(level, dof) s sqrt(1 + x^T (X^T X + lam I)^-1 x), s^2 the residual variance
on dof = n - trace(hat matrix) (no interval when dof < 1). Chosen over a bootstrap of the runs: the leverage term
grows as x leaves the runs, also along a direction they never varied (where every resample shares their blind
spot), and it is deterministic, instant and the very model predicted with. It trusts that model, which may fail
outside the recorded range: `faasgd predict` names such settings (cli/predict_range.py). The time to target's
interval combines its parts', each at level 1 - (1 - level) / 3 (Bonferroni), at their worst combinations
(start_low + samples_low / rate_high, start_high + samples_high / rate_low).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from faasgd import job
from faasgd.config import FIELDS, config_from_record
from faasgd.profile import figures
from faasgd.profile.figures import DRIPLE

TOTALS = ("cpu_s",) + figures.TOTALS  # the workers' CPU-seconds, then the bytes to and from the stores
TARGETS: tuple[str, ...] = DRIPLE + TOTALS + ("time_to_target_s",)
PARTS = ("start_s", "samples_to_target", "samples_per_s")  # time_to_target_s = start + samples / rate, each fitted
FITTED: tuple[str, ...] = DRIPLE + TOTALS + PARTS  # what has weights of its own
TIMES = ("time_to_target_s", "start_s", "samples_per_s")  # measured on the store's clock (faasgd.job.result)
STORES = ("redis", "memcached")
RULES = ("sum", "average", "adagrad")
COMMUNICATIONS = ("background", "blocking")
MODES = ("loop", "per-iteration", "single")
RIDGE = 0.1  # the fit's own regularisation (features are logs and their products, of order 1-100)
TRANSFER_RIDGE = 1000.0  # pull towards the rescaled source weights when adapting (a prior worth tens of runs)
TRANSFER_PRIOR_RUNS = 1.0  # the rescaling is shrunk as if this many more runs had a residual of 0
CLOCK_TICK_S = {"redis": 1e-6, "memcached": 1.0}  # the store's server_time resolution (store/base.py)
MIN_CLOCK_TICKS = 10  # a time is learnt from (and scored on) only when it spans at least this many ticks
LEVEL = 0.9  # the prediction intervals' default level: 9 of 10 new runs of a configuration lie inside


def parameter_count(sizes: Iterable[int]) -> int:
    sizes = list(sizes)
    return sum(a * b + b for a, b in zip(sizes, sizes[1:]))


def store_kind(run: dict) -> str:
    """redis or memcached: from the run's store name, else its store_url scheme."""
    name = str(run.get("store") or "")
    if name in STORES:
        return name
    return "memcached" if str(run.get("store_url") or "").startswith("memcached") else "redis"


CONFIG_KEYS = tuple(FIELDS)


def features(run: dict) -> np.ndarray:
    """The feature vector of a run record (config keys at the top level, as results_store.runs gives them)."""
    config = config_from_record({k: run[k] for k in CONFIG_KEYS if k in run})
    params = parameter_count(job.network_sizes(config))
    log = math.log
    w, p, b = log(config.number_of_workers), (log(config.n_fetch) + log(config.n_push)) / 2, log(config.batch_size)
    onehot = lambda value, choices: [1.0 if value == c else 0.0 for c in choices[1:]]  # noqa: E731
    return np.array([
        1.0, log(params), log(config.batch_size), log(config.number_of_workers), log(config.n_fetch),
        log(config.n_push), log(1.0 / config.n_fetch + 1.0 / config.n_push),
        *onehot(store_kind(run), STORES), *onehot(config.update_rule, RULES),
        *onehot(config.communication, COMMUNICATIONS), *onehot(config.invocation_mode, MODES),
        w * w, w * p, p * p, b * p, w * b,
    ])


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def target_value(run: dict, target: str) -> float | None:
    """The run's measured value of a target or a part, or None when it has none worth learning from."""
    if run.get("state") not in (None, "done"):
        return None
    if target in ("start_s", "samples_per_s"):  # over the whole run: its wall time must be long enough to time
        wall, samples, rate = number(run.get("wall_s")), number(run.get("samples")), number(run.get("samples_per_s"))
        if wall is None or rate is None or samples is None or wall < MIN_CLOCK_TICKS * CLOCK_TICK_S[store_kind(run)]:
            return None
        return rate if target == "samples_per_s" else number(wall - samples / rate)
    value = number(run.get(target))
    if value is not None and target in TIMES and value < MIN_CLOCK_TICKS * CLOCK_TICK_S[store_kind(run)]:
        return None
    return value


def ridge(x: np.ndarray, y: np.ndarray, lam: float, prior: np.ndarray | None = None) -> np.ndarray:
    """argmin |y - x w|^2 + lam |w - prior|^2 (prior 0 when None)."""
    prior = np.zeros(x.shape[1]) if prior is None else prior
    a = x.T @ x + lam * np.eye(x.shape[1])
    return np.linalg.solve(a, x.T @ y + lam * prior)


@dataclass(frozen=True)
class Spread:
    """What a figure's interval needs from its fit (log space): residual variance, its dof, (X^T X + lam I)^-1."""

    variance: float
    dof: float
    inverse: np.ndarray


def spread_of(x: np.ndarray, y: np.ndarray, weights: np.ndarray, lam: float) -> Spread | None:
    """The fit's residual spread; None when the fit leaves less than one degree of freedom to estimate it."""
    inverse = np.linalg.inv(x.T @ x + lam * np.eye(x.shape[1]))
    dof = len(y) - float(np.trace(x @ inverse @ x.T))
    if dof < 1:
        return None
    residuals = y - x @ weights
    return Spread(float(residuals @ residuals) / dof, dof, inverse)


class Predictor:
    """One log-linear model per fitted figure (FITTED), fitted on runs (or adapted from another predictor's
    weights), with its residuals' spread for intervals; the time to target is composed from its parts."""

    def __init__(self, weights: dict[str, np.ndarray], runs_used: dict[str, int],
                 spreads: dict[str, Spread | None] | None = None) -> None:
        self.weights, self.runs_used, self.spreads = weights, runs_used, spreads or {}

    @classmethod
    def fit(cls, runs: list[dict], prior: "Predictor | None" = None, lam: float | None = None) -> "Predictor":
        """Fit each target on the runs that have it; with `prior`, adapt its weights to them (transfer)."""
        weights, used, spreads = {}, {}, {}
        xs = [features(r) for r in runs]
        for target in FITTED:
            rows = [(f, target_value(r, target)) for f, r in zip(xs, runs)]
            rows = [(f, v) for f, v in rows if v is not None]
            base = None if prior is None else prior.weights.get(target)
            if not rows:
                if base is not None:
                    weights[target], used[target], spreads[target] = base, 0, prior.spreads.get(target)
                continue
            x = np.array([f for f, _ in rows])
            y = np.log([v for _, v in rows])
            strength = RIDGE if base is None else TRANSFER_RIDGE if lam is None else lam
            if base is None:
                weights[target] = ridge(x, y, strength)
            else:
                shifted = base.copy()
                shifted[0] += float(np.sum(y - x @ base)) / (len(y) + TRANSFER_PRIOR_RUNS)
                weights[target] = ridge(x, y, strength, shifted)
            used[target] = len(rows)
            spreads[target] = spread_of(x, y, weights[target], strength)
        if all(p in used for p in PARTS):
            used["time_to_target_s"] = min(used[p] for p in PARTS)
        return cls(weights, used, spreads)

    def predict(self, run: dict) -> dict[str, float | None]:
        """Every target (and part) predicted for a run record's configuration; None where nothing was learnt."""
        f = features(run)
        out = {t: (float(np.exp(f @ self.weights[t])) if t in self.weights else None) for t in FITTED}
        start, samples, rate = (out[p] for p in PARTS)
        out["time_to_target_s"] = None if None in (start, samples, rate) else start + samples / rate
        return out

    def interval(self, run: dict, level: float = LEVEL) -> dict[str, tuple[float, float] | None]:
        """Every target's (and part's) prediction interval (low, high) for one run of a run record's
        configuration, at `level`; None where nothing was learnt or too few runs were to estimate the spread."""
        f = features(run)
        out = {t: self.bounds(f, t, level) for t in FITTED}
        parts = [self.bounds(f, p, 1.0 - (1.0 - level) / len(PARTS)) for p in PARTS]
        if None in parts:
            out["time_to_target_s"] = None
        else:
            (start_low, start_high), (samples_low, samples_high), (rate_low, rate_high) = parts
            out["time_to_target_s"] = (start_low + samples_low / rate_high, start_high + samples_high / rate_low)
        return out

    def bounds(self, f: np.ndarray, target: str, level: float) -> tuple[float, float] | None:
        spread = self.spreads.get(target)
        if spread is None or target not in self.weights:
            return None
        from scipy import stats  # here, not at import: scipy.stats costs every faasgd command 0.6 s to load

        centre, quantile = float(f @ self.weights[target]), float(stats.t.ppf(0.5 + level / 2, spread.dof))
        half = quantile * math.sqrt(spread.variance * (1.0 + f @ spread.inverse @ f))
        return math.exp(centre - half), math.exp(centre + half)


def mape(pairs: list[tuple[float, float]]) -> float | None:
    """Mean absolute percentage error of (predicted, actual) pairs, in percent."""
    pairs = [(p, a) for p, a in pairs if p is not None and a]
    return 100.0 * sum(abs(p - a) / abs(a) for p, a in pairs) / len(pairs) if pairs else None


def configuration_of(run: dict) -> str:
    """What identifies a configuration across rounds: every config key but the seed."""
    return repr(sorted((k, repr(run.get(k))) for k in CONFIG_KEYS if k != "seed") + [("store", store_kind(run))])


def validate(runs: list[dict], level: float = LEVEL) -> dict[str, Any]:
    """Leave one configuration out: {target: MAPE %}, with the number of held-out predictions. `mape` is per
    held-out run; `mape_of_means` scores the same predictions against the mean of each held-out configuration's
    rounds (the predictor predicts an expected figure, and one round is a noisier yardstick than their mean);
    `inside` is the % of held-out runs inside their prediction interval at `level` (calibrated: near level)."""
    groups: dict[str, list[dict]] = {}
    for run in runs:
        groups.setdefault(configuration_of(run), []).append(run)
    pairs: dict[str, list] = {t: [] for t in TARGETS}
    means: dict[str, list] = {t: [] for t in TARGETS}
    inside: dict[str, list] = {t: [] for t in TARGETS}
    for key, held in groups.items():
        model = Predictor.fit([r for k, g in groups.items() if k != key for r in g])
        predicted = [(model.predict(run), model.interval(run, level), run) for run in held]
        for target in TARGETS:
            found = [(p[target], i[target], target_value(run, target)) for p, i, run in predicted]
            found = [(p, i, a) for p, i, a in found if p is not None and a is not None]
            pairs[target] += [(p, a) for p, _, a in found]
            inside[target] += [i[0] <= a <= i[1] for _, i, a in found if i is not None]
            if found:  # the rounds differ by their seed alone: one configuration, one prediction
                means[target].append((found[0][0], float(np.mean([a for _, _, a in found]))))
    return {t: {"mape": mape(pairs[t]), "predictions": len(pairs[t]), "mape_of_means": mape(means[t]),
                "configurations": len(means[t]),
                "inside": 100.0 * float(np.mean(inside[t])) if inside[t] else None} for t in TARGETS}


def transfer_curve(source: list[dict], target: list[dict], counts: Iterable[int], seed: int = 0,
                   draws: int = 1) -> dict[int, dict]:
    """MAPE per target on the target setting's runs not used, adapting the source predictor with n of them
    (n = 0: the source predictor as it is), drawn at random (seeded), for each n of `counts`; with `draws` > 1
    the mean over that many draws (one draw of 5 runs can be lucky or not)."""
    base = Predictor.fit(source)
    rng = np.random.default_rng(seed)
    orders = [list(rng.permutation(len(target))) for _ in range(draws)]
    out = {}
    for n in counts:
        found: dict[str, list[float]] = {t: [] for t in TARGETS}
        for order in orders:
            used, held = [target[i] for i in order[:n]], [target[i] for i in order[n:]]
            model = Predictor.fit(used, prior=base) if n else base
            predicted = [model.predict(r) for r in held]
            for t in TARGETS:
                error = mape([(p[t], target_value(r, t)) for p, r in zip(predicted, held) if target_value(r, t)])
                if error is not None:
                    found[t].append(error)
        out[n] = {t: (float(np.mean(v)) if v else None) for t, v in found.items()}
    return out


def round_spread(runs: list[dict]) -> dict[str, float | None]:
    """The noise floor: MAPE per target of predicting each run by the geometric mean of the other rounds of its
    configuration (no model can do much better on held-out configurations than the runs repeat themselves)."""
    groups: dict[str, list[dict]] = {}
    for run in runs:
        groups.setdefault(configuration_of(run), []).append(run)
    out = {}
    for t in TARGETS:
        pairs = []
        for group in groups.values():
            for run in group:
                others = [v for v in (target_value(r, t) for r in group if r is not run) if v is not None]
                actual = target_value(run, t)
                if others and actual is not None:
                    pairs.append((float(np.exp(np.mean(np.log(others)))), actual))
        out[t] = mape(pairs)
    return out
