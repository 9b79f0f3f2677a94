"""faasgd against the compute limit and against Keras, in one run on this machine.

The same MLP (784-100-10, tanh, softmax cross-entropy), batch 128, learning rate 0.1, the same
Fashion-MNIST split and the same number of epochs, three ways:
  1. numpy: one process, plain minibatch SGD with faasgd's model functions, no store (the limit);
  2. keras: `model.fit` on TensorFlow CPU (install the `bench` extra: pip install -e '.[bench]');
  3. faasgd: 2 workers through the local OpenFaaS runtime (gateway, replicas) on Redis.
For each: time to 0.85 test accuracy (wall, from the start of the call, data loading included),
training samples/s, peak RSS per process, final accuracy after the epochs. Then the ratios
faasgd/limit and keras/faasgd for time to 0.85.
Goals (issue 6): faasgd time to 0.85 <= 1.5 x numpy; keras/faasgd >= 2.
Usage: python bench/peers.py [--epochs 10]      (from the repository root)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

TARGET = 0.85
LEARNING_RATE = 0.1
BATCH = 128


def run_numpy(epochs: int) -> dict:
    import numpy as np
    from threadpoolctl import threadpool_limits

    from faasgd import data, model

    started = time.perf_counter()
    train = data.load_shard("fashion-mnist", "train")
    test = data.load_shard("fashion-mnist", "test")
    sizes = (784, 100, 10)
    rng = np.random.default_rng(0)
    weights = model.init_params(sizes, rng)
    grad = np.empty_like(weights)
    reached, train_s, accuracy = None, 0.0, None
    with threadpool_limits(1):  # the best thread count on this size (bench/throughput.py)
        for _ in range(epochs):
            epoch_start = time.perf_counter()
            order = rng.permutation(len(train.y))
            for first in range(0, len(order), BATCH):
                rows = order[first:first + BATCH]
                model.loss_and_grads(weights, sizes, train.x[rows], train.y[rows], "tanh", 0.0, rng, grad_out=grad)
                weights -= np.float32(LEARNING_RATE) * grad
            train_s += time.perf_counter() - epoch_start
            accuracy = model.accuracy(weights, sizes, test.x, test.y)
            if reached is None and accuracy >= TARGET:
                reached = time.perf_counter() - started
    return {"time_to_target_s": reached, "samples_per_s": epochs * len(train.y) / train_s,
            "final_accuracy": accuracy, "peak_rss_mb": [peak_rss_mb()]}


def run_keras(epochs: int) -> dict:
    started = time.perf_counter()
    import tensorflow as tf

    from faasgd import data

    train = data.load_shard("fashion-mnist", "train")
    test = data.load_shard("fashion-mnist", "test")
    tf.keras.utils.set_random_seed(0)
    net = tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(100, activation="tanh"),
                               tf.keras.layers.Dense(10)])
    net.compile(optimizer=tf.keras.optimizers.SGD(LEARNING_RATE),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    seen = {"reached": None, "train_s": 0.0, "accuracy": None}

    class Watch(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch_start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seen["train_s"] += time.perf_counter() - self.epoch_start
            seen["accuracy"] = float(net.evaluate(test.x, test.y, batch_size=8192, verbose=0)[1])
            if seen["reached"] is None and seen["accuracy"] >= TARGET:
                seen["reached"] = time.perf_counter() - started

    net.fit(train.x, train.y, batch_size=BATCH, epochs=epochs, shuffle=True, verbose=0, callbacks=[Watch()])
    return {"time_to_target_s": seen["reached"], "samples_per_s": epochs * len(train.y) / seen["train_s"],
            "final_accuracy": seen["accuracy"], "peak_rss_mb": [peak_rss_mb()]}


def run_faasgd(epochs: int) -> dict:
    from faasgd.openfaas import wait_for_job
    from faasgd.local import control
    from faasgd.local.stores import free_port

    directory = tempfile.mkdtemp(prefix="faasgd-peers-")
    state, _ = control.up("stack.yml", free_port(), directory)  # a fresh runtime: replica peaks are this job's
    try:
        gateway = control.client(state, timeout_s=60)  # logs in to /system
        body = {"number_of_workers": 2, "max_epochs": epochs, "target_accuracy": 1.0, "n_fetch": 10, "n_push": 10,
                "learning_rate": LEARNING_RATE, "batch_size": BATCH}
        started = time.perf_counter()
        answer = gateway.invoke("emnist-setup", body).json()
        query = {**answer["status_query"], "events": "1"}
        status = wait_for_job(lambda: gateway.job_status(query), 3600, poll_s=0.2)
        ended = time.perf_counter()
        result = status["result"]
        epochs_seen = [e for e in status["events"] if e.get("event") == "epoch" and e["accuracy"] >= TARGET]
        # the job's clock starts at creation; add the time from our call to it (validation, init)
        offset = (ended - started) - (result["finished_at"] - status["created_at"])
        reached = min(e["at"] for e in epochs_seen) - status["created_at"] + offset if epochs_seen else None
        pids = gateway.request("GET", "/system/function/emnist-train").json()["pids"]
        return {"time_to_target_s": reached, "samples_per_s": result["samples_per_s"],
                "final_accuracy": result["final_test_accuracy"], "peak_rss_mb": [vm_hwm_mb(pid) for pid in pids]}
    finally:
        control.down(directory)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def vm_hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        line = next(l for l in f if l.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def interpreter_with_numpy_mb() -> float:
    code = "import numpy, resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)


def in_subprocess(role: str, epochs: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--role", role, "--epochs", str(epochs)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--role", choices=("numpy", "keras", "faasgd"), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        runner = {"numpy": run_numpy, "keras": run_keras, "faasgd": run_faasgd}[args.role]
        print(json.dumps(runner(args.epochs)))
        return
    rows = {role: in_subprocess(role, args.epochs) for role in ("numpy", "keras", "faasgd")}
    print(f"Fashion-MNIST, 784-100-10 tanh, batch {BATCH}, lr {LEARNING_RATE}, {args.epochs} epochs, target {TARGET}")
    print(f"{'':<8} {'to 0.85 (s)':>11} {'samples/s':>11} {'final acc':>9}  peak RSS per process (MB)")
    for role, row in rows.items():
        if "error" in row:
            print(f"{role:<8} failed: {row['error']}")
            continue
        ttt = row["time_to_target_s"]
        print(f"{role:<8} {'-' if ttt is None else f'{ttt:.2f}':>11} {row['samples_per_s']:>11,.0f} "
              f"{row['final_accuracy']:>9.4f}  {', '.join(f'{m:.0f}' for m in row['peak_rss_mb'])}")

    def ratio(a: str, b: str) -> str:
        ta, tb = rows[a].get("time_to_target_s"), rows[b].get("time_to_target_s")
        return f"{ta / tb:.2f}" if ta and tb else "-"

    print(f"time to 0.85: faasgd / numpy limit = {ratio('faasgd', 'numpy')} (goal <= 1.5); "
          f"keras / faasgd = {ratio('keras', 'faasgd')} (goal >= 2)")
    if "error" not in rows["faasgd"] and "error" not in rows["numpy"]:
        shard_mb = 30000 * 784 / 2**20  # the shard as the worker holds it: raw uint8 pixels
        params_mb = 79510 * 4 / 2**20
        budget = 1.5 * (shard_mb + 3 * params_mb + interpreter_with_numpy_mb())
        print(f"worker peak RSS {max(rows['faasgd']['peak_rss_mb']):.0f} MB against the budget 1.5 x (uint8 shard "
              f"{shard_mb:.0f} + 3 x params {params_mb:.1f} + interpreter with numpy) = {budget:.0f} MB")


if __name__ == "__main__":
    main()
