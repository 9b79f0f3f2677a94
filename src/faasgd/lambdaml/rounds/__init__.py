"""Synchronous rounds through a blob space (LambdaML's grad_avg / model_avg over reduce / reduce_scatter).

    wire.py        object names and the checked float32 encoding of one slice
    exchange.py    Exchange.all_reduce: one round's barrier, merge and result, with deadlines and accounting
    algorithms.py  grad_avg and model_avg as resumable rounds over a gradient function
    convex_rounds.py  consensus ADMM (lr, svm) and distributed KMeans as resumable rounds
    errors.py      RoundError, RoundTimeout, RoundDataError
"""

from faasgd.lambdaml.rounds.algorithms import (ALGORITHMS, RoundOutcome, RoundState, consensus_round, grad_avg_round,
                                      model_avg_round, run_rounds, taken_round)
from faasgd.lambdaml.rounds.convex_rounds import admm_parts, admm_round, admm_state, admm_z, kmeans_round
from faasgd.lambdaml.rounds.errors import RoundDataError, RoundError, RoundTimeout
from faasgd.lambdaml.rounds.exchange import OPS, PATTERNS, Exchange, ExchangeConfig, RoundStats

__all__ = ["ALGORITHMS", "OPS", "PATTERNS", "Exchange", "ExchangeConfig", "RoundDataError", "RoundError",
           "RoundOutcome", "RoundState", "RoundStats", "RoundTimeout", "admm_parts", "admm_round", "admm_state",
           "admm_z", "consensus_round", "kmeans_round", "grad_avg_round",
           "model_avg_round", "run_rounds", "taken_round"]
