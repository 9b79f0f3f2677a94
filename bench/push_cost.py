"""What a Downpour push costs the worker, piece by piece, on the communication thread's CPU clock.

One process against a real redis-server: a training thread steps the job's MLP on minibatches of its shard as a
worker does, and every `--period` steps pushes an update with a record (as the worker's push: a push id, the
weights it leaves decoded into a buffer) on a second thread (`background`), on the training thread (`blocking`),
or not at all (`none`: the bare loop). Prints per sample the training thread's minibatch and step time
(perf_counter) and its CPU, and per push the pushing thread's CPU (time.thread_time) in all and in pieces: its two
exchanges with the server (WATCH and the MGET of the chunks; MULTI, the chunks, the record, the expiries, INCR,
EXEC: store/redis_push.py), adding the delta into the buffer it leaves the weights in (sent from there, so nothing is decoded but the chunks of
a conflict), the record's JSON. Pieces are timed by wrapping those functions for the run (~1 µs a call). CPU clocks are
the measure because on a shared machine wall time mostly says what else ran. Compare two source trees by running
it under each (PYTHONPATH), alternately.

Usage: python bench/push_cost.py [--dataset fashion-mnist] [--steps 1500] [--period 10] [--modes none,blocking,background]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from faasgd import data, job
from faasgd.config import load_config
from faasgd.model import GradOut
from faasgd.local.services.stores import start_redis
from faasgd.store import PushId, codec, open_store, redis_push
from faasgd.worker.progress import WorkerProgress

PIECES = [  # (owner, attribute, label): what a Redis push spends its CPU on
    (redis_push, "exchange", "exchanges"),  # WATCH + MGET, then MULTI ... EXEC: packing, the socket, the replies
    (codec, "add_into", "add"),  # the delta added into the buffer the push leaves its weights in, sent from there
    (codec, "record_to_bytes", "record json"),
]
MODES = ("none", "blocking", "background")


@contextlib.contextmanager
def timed_pieces():
    """While open, PIECES add their calls' thread CPU seconds to the dict yielded (by label); restored after."""
    spent = dict.fromkeys((label for _, _, label in PIECES), 0.0)
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in PIECES]
    for (owner, name, original), (_, _, label) in zip(originals, PIECES):
        setattr(owner, name, _timing(original, label, spent))
    try:
        yield spent
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _timing(function, label: str, spent: dict):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - started
    return timed


def measure(store_url: str, mode: str, steps: int, period: int, dataset: str = "fashion-mnist") -> dict:
    """One run of `steps` minibatch steps pushing every `period` (`mode`): µs a sample and ms a push."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    config = load_config({}, {"dataset": dataset, "number_of_workers": 1, "store_url": store_url})
    store = open_store(store_url)
    job_id = job.create_job(store, config)
    net, (weights, _) = job.network(config), store.get_weights(job_id)
    grad, fetched, delta = np.empty_like(weights), np.empty_like(weights), np.full_like(weights, 1e-7)
    shard = data.load_shard(dataset, "train", 0, 1, scaled=False)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(shard.y))
    batch = config.batch_size
    raw, x = np.empty((batch, shard.x.shape[1]), shard.x.dtype), np.empty((batch, shard.x.shape[1]), np.float32)
    progress, pushes = WorkerProgress.fresh(0, 1), {"n": 0, "cpu": 0.0}
    progress.owner = "push-cost"

    def push(seq: int, record: dict) -> None:
        started = time.thread_time()
        store.push_update(job_id, delta, out=fetched, push_id=PushId(0, seq), record=record)
        pushes["n"], pushes["cpu"] = pushes["n"] + 1, pushes["cpu"] + time.thread_time() - started

    batches_s = steps_s = 0.0
    with timed_pieces() as spent, ThreadPoolExecutor(1) as pool, threadpool_limits(1):
        in_flight, cpu = None, time.thread_time()
        for step in range(steps):
            first = (step * batch) % (len(order) - batch)
            started = time.perf_counter()
            np.take(shard.x, order[first:first + batch], axis=0, out=raw)
            np.divide(raw, np.float32(255), out=x)
            gathered = time.perf_counter()
            net.loss_and_grads(weights, x, shard.y[order[first:first + batch]], rng, GradOut(grad))
            weights -= np.float32(config.learning_rate) * grad
            batches_s, steps_s = batches_s + gathered - started, steps_s + time.perf_counter() - gathered
            if mode != "none" and (step + 1) % period == 0:
                if in_flight is not None:
                    in_flight.result()
                progress.pushes = pushes["n"] + 1
                record = progress.record()
                in_flight = pool.submit(push, progress.pushes, record) if mode == "background" else None
                if mode == "blocking":
                    push(progress.pushes, record)
        if in_flight is not None:
            in_flight.result()
        cpu = time.thread_time() - cpu
    samples, n = steps * batch, max(1, pushes["n"])
    return {"mode": mode, "pushes": pushes["n"], "batches_us": batches_s / samples * 1e6,
            "steps_us": steps_s / samples * 1e6, "training_cpu_us": cpu / samples * 1e6,
            "push_ms": pushes["cpu"] / n * 1e3, "pieces_ms": {k: v / n * 1e3 for k, v in spent.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--period", type=int, default=10)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    server = start_redis()
    try:
        print("clocks: batch and step µs a sample on the training thread's time.perf_counter; training CPU µs a sample "
              "on its time.thread_time; push CPU and its pieces, ms a push, on the pushing thread's time.thread_time")
        print(f"{'mode':<10} {'pushes':>6} {'batch µs/sample':>15} {'step µs/sample':>14} {'train CPU µs/s.':>15} "
              f"{'push CPU ms':>11}  pieces (ms a push)")
        for mode in args.modes.split(","):
            row = measure(server.url, mode, args.steps, args.period, args.dataset)
            pieces = ", ".join(f"{label} {ms:.3f}" for label, ms in row["pieces_ms"].items())
            print(f"{mode:<10} {row['pushes']:>6} {row['batches_us']:>15.2f} {row['steps_us']:>14.2f} "
                  f"{row['training_cpu_us']:>15.2f} {row['push_ms']:>11.3f}  {pieces}", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
