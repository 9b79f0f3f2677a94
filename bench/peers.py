"""faasgd against the compute limit, Keras and PyTorch, in one run on this machine.

The same MLP (784-100-10, tanh, softmax cross-entropy), batch 128, learning rate 0.1, the same
Fashion-MNIST split and the same number of epochs, seven ways:
  1. numpy: one process at 1 BLAS thread, plain minibatch SGD with faasgd's model functions, no store (the limit);
  2. torch: one process at 1 thread, the same start weights and epoch orders as numpy (bench/peers_torch.py);
  3. keras: `model.fit` on TensorFlow CPU, TensorFlow's default threads (install the `bench` extra:
     pip install -e '.[bench]', which also brings torch);
  4. torch-ddp: DistributedDataParallel, gloo, 2 spawned processes of 1 thread, 128 rows per process a step;
  5. faasgd: 2 workers (1 BLAS thread, 128 rows a step each) through the local OpenFaaS runtime on Redis;
  6. faasgd-64: the same with 64 rows a step each (global_batch_size 128): the model moves by 128 rows' gradients
     per pair of steps, as numpy's one step of 128 does, where 2 x 128 at the default `average` needs about
     1.5-2 x numpy's samples (docs/explanation/downpour.md); shown beside faasgd, not instead of it;
  7. direct-64: `faasgd train --direct` with 2 workers of 64 rows: worker processes against a redis-server the row
     starts, no runtime (the whole command's floor; its time holds the store's start).
Each row runs in a fresh process the bench starts; the rows alternate (round r starts the order at row r + 1), so a
drift of the machine's load falls on all of them. For each: time to 0.85 test accuracy on CLOCK_MONOTONIC
(time.monotonic, one clock for every process), from the bench's reading just before it started the row's process:
the interpreter's start, imports, data loading, spawning and (faasgd) the runtime's start are in it; "ready" is
the time from that reading to the first training step. Also training samples/s, peak RSS per process and the
final accuracy after the epochs; the median and spread over rounds; then the ratios of time to 0.85.
Goals: faasgd time to 0.85 <= 1.5 x numpy; direct-64 <= 0.8 x numpy; keras/faasgd, torch/faasgd and torch-ddp/faasgd >= 2.

The CNN row: the LeNet of `model: cnn` (faasgd.model.cnn_layout), batch 128, learning rate 0.1,
from the same initial weights, two ways: keras-cnn, `model.fit` in one process (TensorFlow's default
threads); faasgd-cnn, 2 workers through the local runtime (one TF thread each, model/cnn_keras.py), with
update_rule sum (docs/explanation/downpour.md "Update rules": sum for 1-2 workers; each push moves the model as one process's
steps would). Time to 0.90 *test* accuracy (every epoch's test_accuracy event). Goal: faasgd-cnn <= 1.5 x keras-cnn.
Usage: python bench/peers.py [--epochs 10] [--cnn-epochs 20] [--rounds 1] [--only mlp|cnn]   (from the repository root)
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import peers_report  # beside this script, whose folder Python puts first on sys.path

TARGET = 0.85
CNN_TARGET = 0.90
CNN_LOWER = (0.88, 0.89)  # also timed: plain SGD at lr 0.1 hovers near 0.90 on this net, so a run may never cross it
CNN_ARCH = "lenet"
LEARNING_RATE = 0.1
BATCH = 128


def run_numpy(epochs: int, launched: float, target: float = TARGET) -> dict:
    import numpy as np
    from threadpoolctl import threadpool_limits

    from faasgd import data, model

    train = data.load_shard("fashion-mnist", "train")
    test = data.load_shard("fashion-mnist", "test")
    sizes = (784, 100, 10)
    rng = np.random.default_rng(0)
    weights = model.init_params(sizes, rng)
    grad = np.empty_like(weights)
    ready, reached, train_s, accuracy, passes = time.monotonic() - launched, None, 0.0, None, None
    with threadpool_limits(1):  # the best thread count on this size (bench/throughput.py)
        for epoch in range(1, epochs + 1):
            epoch_start = time.monotonic()
            order = rng.permutation(len(train.y))
            for first in range(0, len(order), BATCH):
                rows = order[first:first + BATCH]
                model.loss_and_grads(weights, sizes, train.x[rows], train.y[rows], "tanh", 0.0, rng, model.GradOut(grad))
                weights -= np.float32(LEARNING_RATE) * grad
            train_s += time.monotonic() - epoch_start
            accuracy = model.accuracy(weights, sizes, test.x, test.y)
            if reached is None and accuracy >= target:
                reached, passes = time.monotonic() - launched, epoch
    return {"time_to_target_s": reached, "ready_s": ready, "samples_per_s": epochs * len(train.y) / train_s,
            "final_accuracy": accuracy, "peak_rss_mb": [peak_rss_mb()], "passes_to_target": passes}


def run_keras(epochs: int, launched: float, target: float = TARGET) -> dict:
    import tensorflow as tf

    from faasgd import data

    train = data.load_shard("fashion-mnist", "train")
    test = data.load_shard("fashion-mnist", "test")
    tf.keras.utils.set_random_seed(0)
    net = tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(100, activation="tanh"),
                               tf.keras.layers.Dense(10)])
    net.compile(optimizer=tf.keras.optimizers.SGD(LEARNING_RATE),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    seen = {"reached": None, "train_s": 0.0, "accuracy": None, "ready": None, "passes": None}

    class Watch(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch_start = time.monotonic()
            seen["ready"] = seen["ready"] or self.epoch_start - launched

        def on_epoch_end(self, epoch, logs=None):
            seen["train_s"] += time.monotonic() - self.epoch_start
            seen["accuracy"] = float(net.evaluate(test.x, test.y, batch_size=8192, verbose=0)[1])
            if seen["reached"] is None and seen["accuracy"] >= target:
                seen["reached"], seen["passes"] = time.monotonic() - launched, epoch + 1

    net.fit(train.x, train.y, batch_size=BATCH, epochs=epochs, shuffle=True, verbose=0, callbacks=[Watch()])
    return {"time_to_target_s": seen["reached"], "ready_s": seen["ready"],
            "samples_per_s": epochs * len(train.y) / seen["train_s"], "final_accuracy": seen["accuracy"],
            "peak_rss_mb": [peak_rss_mb()], "passes_to_target": seen["passes"]}


def run_keras_cnn(epochs: int, launched: float, target: float = CNN_TARGET) -> dict:
    """Keras model.fit of the job's LeNet from the weights a faasgd job of seed 0 starts from."""
    import numpy as np
    import tensorflow as tf

    from faasgd import data, model

    train = data.load_shard("fashion-mnist", "train")
    test = data.load_shard("fashion-mnist", "test")
    cnn = model.CNN.of(CNN_ARCH, 784, 10)
    net = cnn.keras_model(cnn.init_params(np.random.default_rng(0)))  # the same architecture, the same start
    tf.keras.utils.set_random_seed(0)
    net.compile(optimizer=tf.keras.optimizers.SGD(LEARNING_RATE),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    images = lambda shard: shard.x.reshape(-1, 28, 28, 1)  # noqa: E731 - float32 in [0, 1], as the workers feed
    seen = {"reached": None, "train_s": 0.0, "accuracy": None, "epochs": 0, "lower": {}}

    class Watch(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch_start = time.monotonic()
            seen["ready"] = seen.get("ready") or self.epoch_start - launched

        def on_epoch_end(self, epoch, logs=None):
            seen["train_s"] += time.monotonic() - self.epoch_start
            seen["accuracy"] = float(net.evaluate(images(test), test.y, batch_size=1024, verbose=0)[1])
            seen["epochs"] = epoch + 1
            for lower in CNN_LOWER:
                if seen["accuracy"] >= lower:
                    seen["lower"].setdefault(str(lower), time.monotonic() - launched)
            if seen["reached"] is None and seen["accuracy"] >= target:
                seen["reached"] = time.monotonic() - launched
                self.model.stop_training = True

    net.fit(images(train), train.y, batch_size=BATCH, epochs=epochs, shuffle=True, verbose=0, callbacks=[Watch()])
    return {"time_to_target_s": seen["reached"], "ready_s": seen.get("ready"),
            "samples_per_s": seen["epochs"] * len(train.y) / seen["train_s"],
            "final_accuracy": seen["accuracy"], "peak_rss_mb": [peak_rss_mb()], "epochs": seen["epochs"],
            "lower": seen["lower"]}


def run_faasgd_cnn(epochs: int, launched: float, target: float = CNN_TARGET) -> dict:
    return run_faasgd(epochs, launched, target, cnn=True)


def run_faasgd_64(epochs: int, launched: float, target: float = TARGET) -> dict:
    """2 workers of 64 rows a step: 128 rows a pair of steps, numpy's batch."""
    return run_faasgd(epochs, launched, target, batch=BATCH // 2)


def run_faasgd(epochs: int, launched: float, target: float = TARGET, cnn: bool = False, batch: int = BATCH) -> dict:
    from faasgd.openfaas import wait_for_job
    from faasgd.local.lifecycle import control
    from faasgd.local.lifecycle.options import UpOptions
    from faasgd.local.services.stores import free_port

    directory = tempfile.mkdtemp(prefix="faasgd-peers-")
    state, _ = control.up(UpOptions("stack.yml", free_port(), directory))  # a fresh runtime: replica peaks are this job's
    try:
        gateway = control.client(state, timeout_s=60)  # logs in to /system
        body = {"number_of_workers": 2, "max_epochs": epochs, "target_accuracy": 1.0, "n_fetch": 10, "n_push": 10,
                "learning_rate": LEARNING_RATE, "batch_size": batch}
        if cnn:  # stops once the validation accuracy passes the target (test_accuracy below is what is timed)
            body.update(model="cnn", cnn_arch=CNN_ARCH, update_rule="sum", target_accuracy=target + 0.01)
        started = time.monotonic()
        answer = gateway.invoke("emnist-setup", body).json()
        query = {**answer["status_query"], "events": "1"}
        status = wait_for_job(lambda: gateway.job_status(query), 3600, poll_s=0.2)
        ended = time.monotonic()
        result = status["result"]
        reached, lower, _ = times_to_accuracy(status, result["finished_at"], ended - launched, target,
                                              CNN_LOWER if cnn else ())
        train = gateway.request("GET", "/system/function/emnist-train").json()
        # a replica's worker runs in its function process: the zygote's child (local/replicas/zygote.py), else in its tree
        peaks = [vm_hwm_mb(pid) for pid in train.get("function_pids", [])] or [tree_hwm_mb(p) for p in train["pids"]]
        return {"time_to_target_s": reached, "ready_s": started - launched, "samples_per_s": result["samples_per_s"],
                "final_accuracy": result["final_test_accuracy"], "peak_rss_mb": peaks,
                "epochs": result.get("epochs"), "lower": lower, "passes_to_target": passes_to_target(status, target),
                "split": {key: result[key] for key in peers_report.SPLIT_KEYS}}
    finally:
        control.down(directory)
        shutil.rmtree(directory, ignore_errors=True)  # the runtime's state, logs and builds: nothing left in /tmp


def times_to_accuracy(status: dict, finished_at: float, since_launch: float, target: float,
                      lower: tuple[float, ...] = ()) -> tuple[float | None, dict[str, float], float]:
    """When the job's test accuracy first reached `target` (and each of `lower`), in seconds from the row's launch,
    and the launch-to-creation offset used.

    The test accuracy is what the other rows time (a job's stop rule reads its validation rows, held out of
    training): the job's test curve (faasgd.batch.runs.curve: the epoch events that evaluated the test rows, one
    worker a round, in seconds since the job's creation on its clock). The time from the launch to the creation
    (process, imports, runtime or store up, the call, validation, init) is the launch to the result seen,
    `since_launch`, less the job's own span: it also holds the lag from the job's end to the result seen (a status
    poll, the workers' exit), so every time here is late by that lag, at most."""
    from faasgd.batch.runs import curve

    points = curve(status, "test_accuracy")
    offset = since_launch - (finished_at - status["created_at"])

    def first(accuracy: float) -> float | None:
        return next((at + offset for at, value in points if value >= accuracy), None)

    return first(target), {str(t): at for t in lower if (at := first(t)) is not None}, offset


def passes_to_target(status: dict, target: float) -> int | None:
    """The job's epoch (each worker's e-th pass over its shard: e passes over the training rows in all) whose test
    evaluation first reached `target`, as the one-process rows count theirs; None when none did."""
    crossed = sorted((e["at"], e["epoch"]) for e in status.get("events", [])
                     if e.get("event") == "epoch" and (e.get("test_accuracy") or 0.0) >= target)
    return crossed[0][1] if crossed else None


def run_faasgd_direct(epochs: int, launched: float, target: float = TARGET) -> dict:
    """`faasgd train --direct` as a user runs it: 2 worker processes (64 rows a step each: numpy's 128 a pair of
    steps) against a redis-server this row starts (in its time), no runtime, no gateway. The forkserver its workers
    fork from starts first, as `faasgd train --direct` starts it before its own imports (cli/forkserver.py)."""
    from faasgd.cli import forkserver

    forkserver.start()
    from faasgd import job
    from faasgd.cli import direct
    from faasgd.config import load_config
    from faasgd.functions import replica_cache
    from faasgd.local.services.stores import start_redis

    server = start_redis()
    try:
        config = load_config({}, {"dataset": "fashion-mnist", "number_of_workers": 2, "max_epochs": epochs,
                                  "target_accuracy": 1.0, "n_fetch": 10, "n_push": 10, "learning_rate": LEARNING_RATE,
                                  "global_batch_size": BATCH, "store_url": server.url})
        peaks: dict[int, float] = {}
        started = time.monotonic()
        result = direct.train(config, on_status=lambda _status: sample_worker_peaks(peaks))
        ended = time.monotonic()
        store = replica_cache.store_for(server.url)
        status = {**job.read_status(store, result["job_id"]), "events": store.events(result["job_id"])}
        reached, _, offset = times_to_accuracy(status, result["finished_at"], ended - launched, target)
        # job_offset_s: launch to the job's creation, as the times count it (held to ready_s in a test: the job's span
        # on the store's clock must fit inside direct.train's call on this one)
        return {"time_to_target_s": reached, "ready_s": started - launched, "job_offset_s": offset,
                "samples_per_s": result["samples_per_s"],
                "final_accuracy": result["final_test_accuracy"], "peak_rss_mb": sorted(peaks.values()),
                "epochs": result.get("epochs"), "passes_to_target": passes_to_target(status, target),
                "split": {key: result[key] for key in peers_report.SPLIT_KEYS}}
    finally:
        server.stop()


def peak_rss_mb() -> float:
    """This process's peak RSS."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sample_worker_peaks(peaks: dict[int, float]) -> None:
    """Each direct worker's peak RSS so far into `peaks` (pid -> MB). The workers are the children of this process's
    forkserver (its other child, the redis-server, has none), so neither RUSAGE_CHILDREN here nor a wait sees them;
    read at each status read of the job (every openfaas.POLL_S), a worker's last reading is at most that before its
    end."""
    import psutil

    for child in psutil.Process().children():
        try:
            workers = child.children()
        except psutil.Error:
            continue
        for worker in workers:
            try:
                peaks[worker.pid] = max(peaks.get(worker.pid, 0.0), vm_hwm_mb(worker.pid))
            except OSError:  # it ended between the listing and the reading
                pass


def tree_hwm_mb(pid: int) -> float:
    """The largest peak RSS of a replica's process and its descendants (a watchdog's Python child holds the worker)."""
    import psutil

    return max(vm_hwm_mb(p) for p in [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))])


def vm_hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        line = next(l for l in f if l.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def in_subprocess(role: str, epochs: int, target: float | None = None) -> dict:
    """One row in a fresh interpreter; its times count from `launched`, read here just before the process starts."""
    command = [sys.executable, __file__, "--role", role, "--epochs", str(epochs)]
    command += ["--target", str(target)] if target else []
    launched = time.monotonic()
    done = subprocess.run(command + ["--launched", repr(launched)], capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--cnn-epochs", type=int, default=20, help="at most this many epochs for the CNN row")
    parser.add_argument("--rounds", type=int, default=1, help="every MLP row this many times, alternating; medians")
    parser.add_argument("--target", type=float, default=None, help=f"the MLP rows' test accuracy (default {TARGET})")
    parser.add_argument("--only", choices=("mlp", "cnn"), default=None, help="run only the MLP or only the CNN rows")
    parser.add_argument("--role", choices=tuple(RUNNERS), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--launched", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        launched = time.monotonic() if args.launched is None else args.launched
        print(json.dumps(RUNNERS[args.role](args.epochs, launched, **({"target": args.target} if args.target else {}))))
        return
    if args.only != "mlp":
        cnn_rows(args.cnn_epochs)
    if args.only != "cnn":
        mlp_rows(args.epochs, max(1, args.rounds), args.target or TARGET)


def mlp_rows(epochs: int, rounds: int, target: float) -> None:
    """The MLP rows, alternating over `rounds`, summarised as medians (peers_report.py)."""
    runs = peers_report.alternate(MLP_ROLES, rounds, lambda role: in_subprocess(role, epochs, target))
    print(f"Fashion-MNIST, 784-100-10 tanh, lr {LEARNING_RATE}, {BATCH} rows a step per process (torch-ddp and faasgd: "
          f"per worker, 2 workers; faasgd-64 and direct-64: {BATCH // 2} per worker), {epochs} epochs, target {target} "
          f"test accuracy, {rounds} round(s), medians")
    peers_report.print_mlp({role: peers_report.summarise(role_runs) for role, role_runs in runs.items()}, target)


def cnn_rows(epochs: int) -> None:
    """The CNN row: keras-cnn (one process) against faasgd-cnn (2 workers), time to 0.90 test accuracy."""
    rows = {role: in_subprocess(role, epochs) for role in ("keras-cnn", "faasgd-cnn")}
    print(f"Fashion-MNIST, cnn {CNN_ARCH}, batch {BATCH}, lr {LEARNING_RATE}, at most {epochs} epochs, "
          f"target {CNN_TARGET} test accuracy, times on CLOCK_MONOTONIC from just before each row's process starts")
    peers_report.print_cnn(rows, CNN_TARGET, CNN_LOWER)


def run_torch(epochs: int, launched: float, target: float = TARGET) -> dict:
    import peers_torch  # torch only in the rows that train with it

    return peers_torch.run_torch(epochs, launched, target)


def run_torch_ddp(epochs: int, launched: float, target: float = TARGET) -> dict:
    import peers_torch

    return peers_torch.run_torch_ddp(epochs, launched, target)


RUNNERS = {"numpy": run_numpy, "torch": run_torch, "keras": run_keras, "torch-ddp": run_torch_ddp, "faasgd": run_faasgd,
           "faasgd-64": run_faasgd_64, "direct-64": run_faasgd_direct,
           "keras-cnn": run_keras_cnn, "faasgd-cnn": run_faasgd_cnn}
# one process and distributed rows interleaved
MLP_ROLES = ("numpy", "torch", "keras", "torch-ddp", "faasgd", "faasgd-64", "direct-64")


if __name__ == "__main__":
    main()
