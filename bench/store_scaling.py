"""Store scaling: 1, 2 and 4 workers x 1, 2 and 3 store nodes, each node behind a bandwidth-shaped link.

Each store node is a network namespace behind a veth pair limited both ways by tbf (faasgd.testing.shaped_net;
198.18.0.11, .12, ... on the host bridge fsgd-scale-br): the store is the bottleneck, as it is on a cluster
with many workers. memcached: one node is memcached://A:P, several a pool memcached://A1:P1,A2:P2,...; redis:
one node is plain redis://A:P/0, several a Redis Cluster of one master per node (redis-cluster://...). The
workers are local processes on the host (faasgd.cli.direct), unshaped; more workers than cores (2 here) run
time-sliced. Every cell runs twice on the same servers: unshaped first, then shaped. Per cell:

  samples/s   aggregate training samples/s: the workers' samples over the longest worker's training seconds
              (time.perf_counter in each worker around its training epochs; loading and evaluation excluded)
  x unshaped  shaped samples/s over the unshaped run's, same cell
  model       the prediction, low-high: the busiest node's link payload rate over its bytes per sample in + out
              (low: requests and replies take turns) and over the larger way (high: they overlap), bytes per
              sample from the unshaped run, capped by its samples/s (docs/explanation/store-scaling.md)
  KB/sample   per node, in/out: bytes each server itself counted (memcached stats bytes_read/bytes_written,
              Redis INFO total_net_input_bytes/total_net_output_bytes) over the whole job, per training sample
  link use    the busiest node's bytes per training second over the link rate (near 1: the link is the limit)
  conflicts   pushes that lost a race (and were sent again) per applied push, unshaped/shaped: on a slow link
              pushes overlap more, so more are sent twice and the bytes per sample grow

Needs root (namespaces, links, qdiscs). Multi-node cells need the sharded stores; where open_store refuses a
URL the cell prints why and the table goes on. Ctrl-C or SIGTERM removes the nodes.
Usage: python bench/store_scaling.py [--stores memcached,redis] [--workers 1,2,4] [--nodes 1,2,3]
       [--period 10] [--rate-mbit 100] [--samples 60000] [--epochs 2] [--out results/store_scaling]
"""

from __future__ import annotations

import argparse
import json
import signal
import time
from pathlib import Path

from faasgd import job
from faasgd.cli import direct
from faasgd.config import load_config
from faasgd.errors import FaasgdError
from faasgd.store import open_store
from faasgd.testing.shaped_net import PREFIX, ShapedNet
from faasgd.testing.shaped_stores import counters, start_cluster, start_in, store_url

COUNTS = ("pushes", "fetches", "conflicts", "retries", "push_bytes", "fetch_bytes")  # summed over the workers
WIRE_EFFICIENCY = 1448 / 1514  # TCP payload of a full frame (tbf counts the frame: +32 TCP, 20 IP, 14 Ethernet)


def run_job(url: str, servers: list, workers: int, args) -> dict:
    """One job to its end; its samples, training seconds and each server's own byte counts over it."""
    config = load_config({}, {
        "dataset": args.dataset, "number_of_workers": workers, "n_fetch": args.period, "n_push": args.period,
        "max_epochs": args.epochs, "train_samples": args.samples, "target_accuracy": 1.0, "store_url": url,
        "batch_size": 128,
    })
    before = [counters(server) for server in servers]
    started = time.monotonic()
    result = direct.train(config)
    wall_s = time.monotonic() - started
    after = [counters(server) for server in servers]
    if result.get("error"):
        raise FaasgdError(f"job {result.get('job_id')} failed: {result['error']}")
    with open_store(url) as store:
        progress = [p for p in job.read_progress(store, result["job_id"], workers).values() if p]
    samples, train_s = sum(p["samples"] for p in progress), max(p["train_s"] for p in progress)
    return {"samples": samples, "train_s": train_s, "samples_per_s": samples / train_s, "wall_s": wall_s,
            "node_bytes": [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before)],
            **{name: sum(p.get(name, 0) for p in progress) for name in COUNTS}}


def predict(unshaped: dict, rate_mbit: float) -> tuple[float, float]:
    """The model's range for a cell, capped by the unshaped samples/s: the busiest node's link payload rate over
    its bytes per sample both ways added (requests and replies take turns) and one way, the larger (they overlap)."""
    payload_rate = rate_mbit * 1e6 / 8 * WIRE_EFFICIENCY
    samples = unshaped["samples"]
    both = max(read + written for read, written in unshaped["node_bytes"]) / samples
    one = max(max(read, written) for read, written in unshaped["node_bytes"]) / samples
    cap = unshaped["samples_per_s"]
    return min(cap, payload_rate / both), min(cap, payload_rate / one)


def link_use(shaped: dict, rate_mbit: float) -> float:
    busiest = max(max(read, written) for read, written in shaped["node_bytes"])
    return busiest / shaped["train_s"] / (rate_mbit * 1e6 / 8)


def cell(kind: str, nodes: int, workers: int, net: ShapedNet, url: str, servers: list, args) -> dict:
    """The unshaped then the shaped run of one cell, and the model's prediction for it."""
    net.shape(None)
    unshaped = run_job(url, servers, workers, args)
    net.shape(args.rate_mbit)
    shaped = run_job(url, servers, workers, args)
    return {"store": kind, "nodes": nodes, "workers": workers, "period": args.period, "rate_mbit": args.rate_mbit,
            "unshaped": unshaped, "shaped": shaped, "ratio": shaped["samples_per_s"] / unshaped["samples_per_s"],
            "model": predict(unshaped, args.rate_mbit), "link_use": link_use(shaped, args.rate_mbit)}


def start_servers(kind: str, net: ShapedNet) -> list:
    if kind == "redis" and len(net.nodes) > 1:
        return start_cluster(net)
    return [start_in(net, node, kind) for node in net.nodes]


def measure(kind: str, nodes: int, args, say) -> list[dict]:
    """Every worker count's cell on `nodes` shaped nodes of `kind`; a refused URL gives one row naming why."""
    with ShapedNet(nodes, args.rate_mbit, prefix=args.prefix, subnet=args.subnet,
                   node_to_node=kind == "redis" and nodes > 1) as net:
        servers = start_servers(kind, net)
        url = store_url(kind, servers)
        try:
            open_store(url).close()
        except FaasgdError as error:
            say(f"{kind} x {nodes} nodes: skipped, {url} refused: {error}")
            return [{"store": kind, "nodes": nodes, "skipped": f"skipped: {error}"}]
        rows = []
        for workers in args.workers:
            say(f"{kind} x {nodes} node(s), {workers} worker(s): unshaped, then {args.rate_mbit:g} Mbit/s ...")
            try:
                rows.append(cell(kind, nodes, workers, net, url, servers, args))
            except FaasgdError as error:  # one failed job costs its cell, not the table
                rows.append({"store": kind, "nodes": nodes, "workers": workers, "skipped": f"failed: {error}"})
            say(row_text(rows[-1]))
        return rows


def row_text(row: dict) -> str:
    if "skipped" in row:
        return f"{row['store']:<9} {row['nodes']:>5} {row.get('workers', ''):>7}   {row['skipped']}"
    shaped, unshaped = row["shaped"], row["unshaped"]
    per_node = " ".join(f"{kb(r, shaped['samples']):.2f}/{kb(w, shaped['samples']):.2f}" for r, w in shaped["node_bytes"])
    return (f"{row['store']:<9} {row['nodes']:>5} {row['workers']:>7} {unshaped['samples_per_s']:>10,.0f} "
            f"{shaped['samples_per_s']:>10,.0f} {row['ratio']:>9.2f} {row['model'][0]:>8,.0f}-{row['model'][1]:<8,.0f}"
            f"{shaped['samples_per_s'] / row['model'][1]:>7.2f} {row['link_use']:>8.2f} "
            f"{unshaped['conflicts'] / max(1, unshaped['pushes']):>5.2f}/{shaped['conflicts'] / max(1, shaped['pushes']):<5.2f}  "
            f"{per_node}")


def print_table(rows: list[dict], args) -> None:
    print(f"\nn_fetch = n_push = {args.period}; links {args.rate_mbit:g} Mbit/s each way per node; {args.dataset}, "
          f"784-100-10 MLP, batch 128, {args.samples} rows x {args.epochs} epochs a job")
    print(f"{'store':<9} {'nodes':>5} {'workers':>7} {'unshaped':>10} {'shaped':>10} {'x unshaped':>9} "
          f"{'model (low-high)':>17} {'/ high':>7} {'link use':>8} {'conflicts':>11}  KB/sample per node, in/out")
    for row in rows:
        print(row_text(row))
    print("samples/s: training samples over the longest worker's training seconds (time.perf_counter in the workers)."
          "\nmodel: link payload rate / busiest node's bytes per sample, in + out (low) and the larger way (high), from"
          " the unshaped run, capped by its samples/s; / high: shaped over the high end."
          "\nconflicts: pushes lost to a race per applied push, unshaped/shaped (each is sent again: more bytes)."
          "\nKB/sample: the shaped run's bytes each server counted itself (read/written) per training sample."
          "\nMore workers than this machine's cores run time-sliced: the unshaped column at 4 workers measures sharing.")


def kb(node_bytes: int, samples: int) -> float:
    return node_bytes / samples / 1000


def interrupt(signum, frame) -> None:
    """SIGTERM as Ctrl-C: the nodes' context is left, removing them."""
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="memcached,redis")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--nodes", default="1,2,3")
    parser.add_argument("--period", type=int, default=10, help="n_fetch = n_push")
    parser.add_argument("--rate-mbit", type=float, default=100.0, help="each node's link, each way (Mbit/s)")
    parser.add_argument("--samples", type=int, default=60000, help="training rows a job uses (train_samples)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--out", default="results/store_scaling")
    parser.add_argument("--prefix", default=PREFIX, help="names of the namespaces and links (removed at start)")
    parser.add_argument("--subnet", type=int, default=0, help="the nodes' 198.18.SUBNET.0/24")
    args = parser.parse_args()
    args.workers = [int(w) for w in args.workers.split(",")]
    signal.signal(signal.SIGTERM, interrupt)

    def say(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)

    rows = [row for kind in args.stores.split(",") for nodes in (int(n) for n in args.nodes.split(","))
            for row in measure(kind, nodes, args, say)]
    print_table(rows, args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"cells-n{args.period}.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {out / f'cells-n{args.period}.json'}")


if __name__ == "__main__":
    main()
