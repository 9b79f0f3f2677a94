"""Memcached's binary protocol against the text protocol, on faasgd's fetch and push paths.

A real memcached on loopback (faasgd.local.services.stores) holds a parameter vector in the project's chunks
(codec.DEFAULT_CHUNK_FLOATS float32 each, with memcached_push's header); each client times
  fetch: one multi-get of every chunk (what MemcachedStore._read_weights sends), and
  push:  gets of every chunk and the worker's record, a cas of every chunk, then a cas of the
         record (memcached_push.push_with_id without the copy and the numpy add: the same whatever
         the client),
for pymemcache over the text protocol (what faasgd uses), pylibmc (libmemcached) over the binary
protocol, pylibmc over the text protocol (to tell the library from the protocol), and faasgd's own
MemcachedStore (fetch, push_update with a push id) for scale. pylibmc has no multi-key `gets`, so its
push reads key by key: one round trip per chunk more than pymemcache, as a pylibmc backend for faasgd
would have to. Each row runs with Nagle on (both libraries' default, and faasgd's) and off (TCP_NODELAY).
Prints median and p90 latency and payload throughput (MB/s of float bytes); about 70 s per round.
The figures and the decision (not adopted) are in docs/explanation/memcached-protocol.md.

Needs pylibmc (a manylinux wheel bundles libmemcached; `pip install pylibmc`, or the bench extra).
Usage: python bench/memcached_protocol.py [--reps 200] [--sizes 79510,1000000] [--nagle both|on|off] [--rounds 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from pymemcache.client.base import Client as TextClient

from faasgd.local.services.stores import start_memcached
from faasgd.store import codec, keys
from faasgd.store import memcached_push as mpush
from faasgd.store.push import PushId

JOB = "bench"
RECORD = keys.worker(JOB, 0)


class Pymemcache:
    """pymemcache's text client as faasgd configures it (default_noreply=False)."""

    name = "pymemcache text"

    def __init__(self, host: str, port: int, nodelay: bool):
        self.client = TextClient((host, port), default_noreply=False, no_delay=nodelay)

    def fetch(self, names: list[str]) -> dict:
        return self.client.get_many(names)

    def gets(self, names: list[str]) -> dict:
        return self.client.gets_many(names)

    def cas(self, key: str, value: bytes, token) -> bool:
        return bool(self.client.cas(key, value, token, noreply=False))

    def set_many(self, values: dict) -> None:
        self.client.set_many(values, noreply=False)

    def close(self) -> None:
        self.client.close()


class Pylibmc:
    """pylibmc (libmemcached) with cas on, over the binary or the text protocol."""

    def __init__(self, host: str, port: int, nodelay: bool, binary: bool):
        import pylibmc

        self.name = f"pylibmc {'binary' if binary else 'text'}"
        self.client = pylibmc.Client([f"{host}:{port}"], binary=binary,
                                     behaviors={"cas": True, "tcp_nodelay": nodelay})

    def fetch(self, names: list[str]) -> dict:
        return self.client.get_multi(names)

    def gets(self, names: list[str]) -> dict:
        return {k: self.client.gets(k) for k in names}  # no gets_multi in pylibmc

    def cas(self, key: str, value: bytes, token) -> bool:
        return bool(self.client.cas(key, value, token))

    def set_many(self, values: dict) -> None:
        self.client.set_multi(values)

    def close(self) -> None:
        self.client.disconnect_all()


def layout(length: int) -> tuple[list[str], dict]:
    """Chunk keys and stored values of a `length`-float vector, as MemcachedStore writes them."""
    meta = codec.WeightsMeta(length, codec.DEFAULT_CHUNK_FLOATS, writers=1)
    flat = np.random.default_rng(0).standard_normal(length).astype(np.float32)
    names = keys.weights_chunks(JOB, meta.chunks)
    values = {k: mpush.join({}, c) for k, c in zip(names, codec.encode_chunks(flat, meta))}
    values[RECORD] = codec.record_to_bytes({"pushes": 0})
    return names, values


def push(client, names: list[str], seq: int) -> None:
    found = client.gets([RECORD, *names])
    for k in names:
        raw, token = found[k]
        applied, floats = mpush.split(raw)
        if not client.cas(k, mpush.join({**applied, 0: seq}, floats), token):
            raise RuntimeError(f"{client.name}: cas of {k} lost with no other writer")
    if not client.cas(RECORD, codec.record_to_bytes({"pushes": seq}), found[RECORD][1]):
        raise RuntimeError(f"{client.name}: cas of the record lost with no other writer")


def timed(call, reps: int) -> np.ndarray:
    call()  # warm: connect, first buffers
    out = np.empty(reps)
    for r in range(reps):
        start = time.perf_counter()
        call()
        out[r] = time.perf_counter() - start
    return out


def measure(client, length: int, reps: int) -> dict:
    names, values = layout(length)
    client.set_many(values)
    got = client.fetch(names)
    if [got.get(k) for k in names] != [values[k] for k in names]:
        raise RuntimeError(f"{client.name}: fetched chunks differ from the stored ones")
    fetch = timed(lambda: client.fetch(names), reps)
    seq = iter(range(1, reps + 2))
    pushes = timed(lambda: push(client, names, next(seq)), reps)
    mb = 4 * length / 1e6
    return {"chunks": len(names), "fetch": fetch, "push": pushes, "mb": mb}


class Store:
    """faasgd's own MemcachedStore (pymemcache text, memcached_push.py): fetch and push_update with a push id.

    Its push also writes the push's copy (set_many of the delta) and adds the delta in numpy: the
    whole path a worker waits for, next to the bare client rows above it."""

    name = "faasgd store"

    def __init__(self, host: str, port: int, nodelay: bool):
        from pymemcache.client.base import PooledClient

        from faasgd.store import open_store

        client = PooledClient((host, port), default_noreply=False, no_delay=nodelay)  # connect()'s options, Nagle as asked
        self.store = open_store(f"memcached://{host}:{port}", client=client)

    def measure(self, length: int, reps: int) -> dict:
        meta = codec.WeightsMeta(length, codec.DEFAULT_CHUNK_FLOATS)
        rng = np.random.default_rng(0)
        self.store.set_weights(JOB, rng.standard_normal(length).astype(np.float32), writers=1)
        out = np.empty(length, np.float32)
        delta = (1e-6 * rng.standard_normal(length)).astype(np.float32)
        fetch = timed(lambda: self.store.fetch(JOB, out), reps)
        seq = iter(range(1, reps + 2))

        def push() -> None:
            n = next(seq)
            done = self.store.push_update(JOB, delta, out, push_id=PushId(0, n), record={"pushes": n, "owner": "bench"})
            if not done.applied:
                raise RuntimeError(f"faasgd store: push {n} was not applied (records of an earlier row?)")

        return {"chunks": meta.chunks, "fetch": fetch, "push": timed(push, reps), "mb": 4 * length / 1e6}

    def close(self) -> None:
        self.store.close()


def flush(host: str, port: int) -> None:
    client = TextClient((host, port))
    client.flush_all(noreply=False)
    client.close()


def row(name: str, nagle: str, length: int, r: dict) -> str:
    f, p = r["fetch"] * 1e3, r["push"] * 1e3
    return (f"{length:>9} {r['chunks']:>6} {name:<16} {nagle:<5} {np.median(f):>8.3f} {np.percentile(f, 90):>8.3f} "
            f"{r['mb'] / np.median(r['fetch']):>8.0f} {np.median(p):>8.3f} {np.percentile(p, 90):>8.3f} "
            f"{r['mb'] / np.median(r['push']):>8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="timed repetitions per client, size and path")
    parser.add_argument("--sizes", default="79510,1000000", help="float32 counts (784-100-10 MLP, 1M)")
    parser.add_argument("--nagle", choices=("both", "on", "off"), default="both",
                        help="on: the libraries' default (and faasgd's); off: TCP_NODELAY on every client")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the table (the VM's cores are shared)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    nagles = {"both": (True, False), "on": (True,), "off": (False,)}[args.nagle]
    server = start_memcached()
    host, port = server.url.split("://")[1].split(":")
    port = int(port)
    makers = [lambda nd: Pymemcache(host, port, nd), lambda nd: Pylibmc(host, port, nd, True),
              lambda nd: Pylibmc(host, port, nd, False), lambda nd: Store(host, port, nd)]
    try:
        for _ in range(args.rounds):
            print(f"{'floats':>9} {'chunks':>6} {'client':<16} {'nagle':<5} {'fetch p50':>8} {'p90 ms':>8} "
                  f"{'MB/s':>8} {'push p50':>8} {'p90 ms':>8} {'MB/s':>8}")
            for length in sizes:
                for nagle in nagles:
                    for make in makers:
                        flush(host, port)  # each row starts from an empty server: no records of the last
                        client = make(not nagle)
                        try:
                            result = client.measure(length, args.reps) if isinstance(client, Store) else \
                                measure(client, length, args.reps)
                            print(row(client.name, "on" if nagle else "off", length, result), flush=True)
                        finally:
                            client.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
