"""The PyTorch peers of bench/peers.py: the same MLP in one process, and DistributedDataParallel over 2 processes.

Both start from the flat float32 buffer the numpy row and a faasgd job of seed 0 start from
(faasgd.model.init_params with numpy's default_rng(0)) and draw every epoch's order from that same generator,
as the numpy row does:
  * torch: one process, torch.set_num_threads(1) (numpy's row runs at 1 BLAS thread), the whole
    permutation in batches of 128, plain SGD (torch.optim.SGD, lr 0.1);
  * torch-ddp: torch.multiprocessing.spawn of 2 ranks on this machine, gloo backend, one thread each; every
    rank draws the same permutation and takes every 2nd index of it (DistributedSampler's split: padded to a
    multiple of the world size, rank r takes r, r + 2, ...), 128 rows per rank a step (per worker, like
    faasgd's batch_size), DDP averaging the ranks' gradients before each SGD step (lr 0.1). The ranks
    evaluate half of the test set each and add their counts (all_reduce).
Times are on CLOCK_MONOTONIC (time.monotonic, one clock for every process of the machine), counted from
`launched`: the bench's reading just before it started the row's process, so they hold the interpreter's
start, the imports, the data loading and, for DDP, the ranks' spawn and rendezvous.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import socket
import tempfile
import time

SIZES = (784, 100, 10)
SEED = 0
LEARNING_RATE = 0.1
BATCH = 128
WORLD = 2


def start_weights():
    """The flat buffer faasgd starts a job of seed 0 from, and the generator that drew it (it orders the epochs)."""
    import numpy as np

    from faasgd import model

    rng = np.random.default_rng(SEED)
    return model.init_params(SIZES, rng), rng


def torch_mlp(flat):
    """784-100-10 tanh as nn.Sequential holding `flat`'s weights (faasgd keeps W as (in, out), torch as (out, in))."""
    import torch

    from faasgd.model.layout import unflatten

    net = torch.nn.Sequential(torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.Tanh(), torch.nn.Linear(SIZES[1], SIZES[2]))
    with torch.no_grad():
        for layer, (weights, bias) in zip((net[0], net[2]), unflatten(flat, SIZES)):
            layer.weight.copy_(torch.from_numpy(weights.T.copy()))
            layer.bias.copy_(torch.from_numpy(bias.copy()))
    return net


def flat_params(net):
    """The network's parameters back in faasgd's flat layout (float32)."""
    import numpy as np

    parts = []
    for layer in (net[0], net[2]):
        parts += [layer.weight.detach().numpy().T.ravel(), layer.bias.detach().numpy()]
    return np.concatenate(parts).astype(np.float32)


def load_tensors():
    """Fashion-MNIST's training and test rows as torch tensors (float32 pixels in [0, 1], int64 labels)."""
    import numpy as np
    import torch

    from faasgd import data

    shards = [data.load_shard("fashion-mnist", split) for split in ("train", "test")]
    return [(torch.from_numpy(s.x), torch.from_numpy(np.asarray(s.y, dtype=np.int64))) for s in shards]


def train_epoch(net, optimizer, x, y, order) -> None:
    """One pass over the rows of `order` (a numpy index array), BATCH rows a step."""
    import torch

    for first in range(0, len(order), BATCH):
        rows = torch.from_numpy(order[first:first + BATCH])
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(x[rows]), y[rows]).backward()
        optimizer.step()


def correct_count(net, x, y) -> int:
    import torch

    with torch.no_grad():
        return int((net(x).argmax(dim=1) == y).sum())


def run_torch(epochs: int, launched: float, target: float) -> dict:
    """One process, one thread: time to `target` test accuracy from `launched` (CLOCK_MONOTONIC)."""
    import torch

    torch.set_num_threads(1)
    (x, y), (test_x, test_y) = load_tensors()
    flat, rng = start_weights()
    net = torch_mlp(flat)
    optimizer = torch.optim.SGD(net.parameters(), lr=LEARNING_RATE)
    accuracies = [correct_count(net, test_x, test_y) / len(test_y)]
    ready, reached, train_s = time.monotonic() - launched, None, 0.0
    for _ in range(epochs):
        epoch_start = time.monotonic()
        train_epoch(net, optimizer, x, y, rng.permutation(len(y)))
        train_s += time.monotonic() - epoch_start
        accuracies.append(correct_count(net, test_x, test_y) / len(test_y))
        if reached is None and accuracies[-1] >= target:
            reached = time.monotonic() - launched
    return {"time_to_target_s": reached, "ready_s": ready, "samples_per_s": epochs * len(y) / train_s,
            "final_accuracy": accuracies[-1], "accuracies": accuracies, "peak_rss_mb": [peak_rss_mb()],
            "passes_to_target": passes_to_target(accuracies, target),
            "param_digests": [digest(flat_params(net))]}


def run_torch_ddp(epochs: int, launched: float, target: float) -> dict:
    """WORLD ranks spawned by torch.multiprocessing; rank 0's report, with every rank's RSS and parameter digest."""
    import torch.multiprocessing as mp

    directory = tempfile.mkdtemp(prefix="faasgd-peers-ddp-")
    try:
        mp.spawn(ddp_rank, args=(free_port(), epochs, launched, target, directory), nprocs=WORLD, join=True)
        reports = []
        for rank in range(WORLD):
            with open(os.path.join(directory, f"rank{rank}.json")) as f:
                reports.append(json.load(f))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    row = {key: value for key, value in reports[0].items() if key != "param_digest"}
    return {**row, "peak_rss_mb": [r["peak_rss_mb"] for r in reports],
            "param_digests": [r["param_digest"] for r in reports]}


def ddp_rank(rank: int, port: int, epochs: int, launched: float, target: float, directory: str) -> None:
    """One DDP rank: trains its DistributedSampler share of every epoch and writes its report as rank<r>.json."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        report = train_rank(rank, epochs, launched, target)
        dist.barrier()  # both ranks are past every collective before either leaves
    except BaseException:
        dist.destroy_process_group()
        raise
    with open(os.path.join(directory, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)
    # Leave without torch's teardown: its gloo threads aborted the process at the end now and then ("terminate called
    # without an active exception", SIGABRT, 1 run in ~20 of this row on this machine; a make test run failed on it),
    # after the report was complete. Nothing is left to flush: the report is closed, nothing was printed.
    os._exit(0)


def train_rank(rank: int, epochs: int, launched: float, target: float) -> dict:
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    (x, y), (test_x, test_y) = load_tensors()
    flat, rng = start_weights()
    net = DistributedDataParallel(torch_mlp(flat))
    optimizer = torch.optim.SGD(net.parameters(), lr=LEARNING_RATE)
    mine = (test_x[rank::WORLD], test_y[rank::WORLD])

    def test_accuracy() -> float:
        correct = torch.tensor([correct_count(net.module, *mine)])
        dist.all_reduce(correct)
        return int(correct) / len(test_y)

    accuracies = [test_accuracy()]
    ready, reached, train_s = time.monotonic() - launched, None, 0.0
    for _ in range(epochs):
        order = rng.permutation(len(y))
        order = np.concatenate([order, order[:(-len(order)) % WORLD]])[rank::WORLD]
        epoch_start = time.monotonic()
        train_epoch(net, optimizer, x, y, order)
        train_s += time.monotonic() - epoch_start
        accuracies.append(test_accuracy())
        if reached is None and accuracies[-1] >= target:
            reached = time.monotonic() - launched
    return {"time_to_target_s": reached, "ready_s": ready, "samples_per_s": epochs * len(y) / train_s,
            "final_accuracy": accuracies[-1], "accuracies": accuracies, "peak_rss_mb": peak_rss_mb(),
            "passes_to_target": passes_to_target(accuracies, target),
            "param_digest": digest(flat_params(net.module))}


def passes_to_target(accuracies: list[float], target: float) -> int | None:
    """The pass over the training rows after which the test accuracy first reached `target` (accuracies[0] is
    before any training); None when none did."""
    return next((epoch for epoch, accuracy in enumerate(accuracies) if epoch and accuracy >= target), None)


def digest(flat) -> str:
    return hashlib.sha256(flat.tobytes()).hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
