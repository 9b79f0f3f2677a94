"""Emulated nodes: what placing emnist-train beside the store, and the node-local cache, buy at two link rates.

Each cell starts `faasgd up --nodes 3 --node-link RATE --placement P` (P: affinity, the k8s/ manifests' pod affinity
drawing emnist-train to the store's node; spread, the same runtime without it: one replica per node), trains
WORKERS workers on STORE (redis, memcached) with store_topology TOPOLOGY (global: every fetch from the store;
node-local: fetches from the node's memcached-local, refreshed in the background) to the target accuracy through
the gateway (`faasgd train`), and stops the runtime. Per cell:

  time s      the job's time to target on its own clock (the result's `clock`: Redis TIME for a Redis job, the
              functions' time.time for a Memcached one; microseconds)
  samples     training samples of all workers to the target
  placement   the node of each emnist-train replica
  MB per link what each node's link carried during the job, to/from the node (the kernel's counters on the host
              end of its veth pair, /sys/class/net/*/statistics; bytes/10^6)
  model s     the store-scaling model's floor for the job (docs/explanation/store-scaling.md): the busiest link's
              larger way in bytes over its payload rate (rate x 1448/1514); the bytes the link carried, so it
              says how much of the time the link alone explains, not what the affinity run would cost spread

More workers than this machine's 2 cores run time-sliced. Needs root (namespaces, links, qdiscs) and of-watchdog.
Usage: python bench/nodes.py [--quick] [--rates 1gbit,100mbit] [--workers 2] [--rounds 2] [--stores redis]
       [--topologies global] [--periods 10/10] [--backend process] [--out results/nodes]
  --quick: one round of 2 Redis workers, global store, at both rates.
  --backend docker: the replicas as containers (faasgd.local.nodes.docker_net). Each cell's runtime has a registry
  of its own, empty, so the images must be on this machine under the names stack.yml gives with this process's
  REGISTRY and TAG, e.g. built without a registry:
      REGISTRY=faasgd-local faas-cli build -f stack.yml --filter 'emnist-*' --build-arg TEST_ENABLED=false
      REGISTRY=faasgd-local python bench/nodes.py --backend docker
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIRE_EFFICIENCY = 1448 / 1514  # TCP payload of a full Ethernet frame
PLACEMENTS = ("affinity", "spread")


def faasgd(*args, timeout: float = 900) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)
    if done.returncode != 0 and args[0] != "train":
        raise SystemExit(f"faasgd {' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}")
    return done


def rate_mbit(rate: str) -> float:
    from faasgd.local import parse_rate

    return parse_rate(rate)


def cell(rate: str, placement: str, workers: int, seed: int, store: str = "redis", topology: str = "global",
         period: str = "10/10", backend: str = "process") -> dict:
    """One runtime, one job, the runtime stopped again (also on Ctrl-C)."""
    directory = Path(tempfile.mkdtemp(prefix="faasgd-nodes-"))
    try:
        faasgd("up", "--nodes", 3, "--node-link", rate, "--placement", placement, "--port", 0, "--dir", directory,
               "--filter", "emnist-*", "--wait", "--backend", backend)
        state = json.loads((directory / "state.json").read_text())
        faasgd("scale", "emnist-train", "--replicas", workers, "--dir", directory, "--gateway", state["gateway_url"])
        n_fetch, n_push = period.split("/")
        trained = faasgd("train", "--number-of-workers", workers, "--store", store, "--store-topology", topology,
                         "--n-fetch", n_fetch, "--n-push", n_push, "--seed", seed, "--dir", directory, "--json")
        state = json.loads((directory / "state.json").read_text())
    finally:
        faasgd("down", "--dir", directory)
    result = json.loads(trained.stdout or "{}")
    placed = sorted(r["node"] for r in state["replicas"] if r["function"] == "emnist-train")
    return {"rate": rate, "placement": placement, "workers": workers, "seed": seed, "store": store, "topology": topology,
            "period": period, "backend": backend, "state": result.get("state"),
            "reached": result.get("reached_target"), "clock": result.get("clock"), "time_s": result.get("time_to_target_s"),
            "samples": result.get("samples_to_target"), "links": result.get("link_bytes") or {}, "nodes": placed,
            "model_s": model_s(result.get("link_bytes") or {}, rate)}


def model_s(links: dict, rate: str) -> float | None:
    """The busiest link's larger way over its payload rate: the seconds the link alone needs for those bytes."""
    if not links:
        return None
    busiest = max(max(ways.values()) for ways in links.values())
    return busiest / (rate_mbit(rate) * 1e6 / 8 * WIRE_EFFICIENCY)


def row_text(row: dict) -> str:
    links = " ".join(f"{name[-1]}:{ways['to_node'] / 1e6:.1f}/{ways['from_node'] / 1e6:.1f}"
                     for name, ways in sorted(row["links"].items()))
    time_s = f"{row['time_s']:.2f}" if row["time_s"] is not None else "-"
    samples = f"{row['samples']:,}" if row["samples"] is not None else "-"
    model = f"{row['model_s']:.2f}" if row["model_s"] is not None else "-"
    return (f"{row['rate']:<8} {row['store']:<9} {row['topology']:<10} {row['period']:<6} {row['placement']:<9} {row['workers']:>7} {row['seed']:>4} {time_s:>7} {samples:>9} "
            f"{model:>7}  {','.join(n[-1] for n in row['nodes']):<9} {links}"
            + ("" if row["reached"] else f"  (not reached: {row['state']})"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round of 2 workers at both rates")
    parser.add_argument("--rates", default="1gbit,100mbit")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--stores", default="redis", help="redis, memcached, comma-separated")
    parser.add_argument("--topologies", default="global", help="global, node-local, comma-separated")
    parser.add_argument("--periods", default="10/10", help="n_fetch/n_push pairs, comma-separated (10/40: a fetch "
                        "four times a push, where the node-local cache serves fetches; at 10/10 a push's read-back does)")
    parser.add_argument("--backend", choices=("process", "docker"), default="process",
                        help="replicas as processes or as containers (the images on this machine: see the usage)")
    parser.add_argument("--out", default="results/nodes")
    args = parser.parse_args()
    rounds, workers = (1, [2]) if args.quick else (args.rounds, [int(w) for w in args.workers.split(",")])
    stores, topologies = (["redis"], ["global"]) if args.quick else (args.stores.split(","), args.topologies.split(","))
    periods = ["10/10"] if args.quick else args.periods.split(",")
    for period in periods:
        fetch, _, push = period.partition("/")
        if not (fetch.isdigit() and push.isdigit() and int(fetch) > 0 and int(push) > 0):
            parser.error(f"--periods: {period!r} is not n_fetch/n_push, two positive integers")
    print(f"{'link':<8} {'store':<9} {'topology':<10} {'period':<6} {'placement':<9} {'workers':>7} {'seed':>4} {'time s':>7} {'samples':>9} {'model s':>7}  "
          f"{'trains on':<9} MB per link (node:to/from)", flush=True)
    rows = []
    for seed in range(rounds):
        for rate in args.rates.split(","):
            for store, topology, count, period in ((s, t, c, p) for s in stores for t in topologies for c in workers
                                                   for p in periods):
                for placement in PLACEMENTS:
                    rows.append(cell(rate, placement, count, seed, store, topology, period, args.backend))
                    print(row_text(rows[-1]), flush=True)
    print("time s: the job's time to target accuracy 0.85 on its own clock (Redis TIME for Redis, the functions' "
          "time.time for Memcached); samples: all workers' to the target;\nmodel s: the busiest link's larger way over its payload rate; trains on: the nodes "
          "of the emnist-train replicas (node 1 holds the store);\nMB per link: the kernel's counters of each node's "
          f"link over the job, to/from the node. {time.strftime('%Y-%m-%d %H:%M:%S')}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cells.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {out / 'cells.json'}")


if __name__ == "__main__":
    main()
