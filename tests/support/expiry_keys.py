"""Every key under a job's prefix with the seconds it has left, listed from the store itself, and a job's worth
of writes of every kind (store/expiry.py's rule: none may leave a key without the job's expiry).

    ttls = redis_ttls(url, job_id)          SCAN MATCH faasgd:<job>:* then PTTL of each key (None: no expiry)
    ttls = memcached_ttls(url, job_id)      `lru_crawler metadump all`: each item's exp (-1: none)
    ttls = memory_ttls(store, job_id)       the memory store's own expiries
    write_every_kind(store, job_id, 60)     weights, pushes (with and without ids), records, a lease, counters,
                                            events, a blob, a kept copy: every key namespace of keys.py
"""

from __future__ import annotations

import socket
import time
import urllib.parse

import numpy as np
import redis

from faasgd.store import PushId, keys, parse_store_url
from faasgd.store.blobs import BLOB_CHUNK_BYTES

KINDS = ("w:meta", "w:version", "w:0", "r:config", "r:progress:0", "r:lease:0:loop", "c:conflicts", "events",
         "m:final:meta", "m:final:0", "b:residual", "r:heartbeat:0")  # what write_every_kind leaves (plus more)
MEMCACHED_KINDS = ("p:0:meta", "p:0:0", "e:0")  # a push copy and event keys: Memcached only


def redis_ttls(url: str, job_id: str) -> dict[str, float | None]:
    client = redis.Redis.from_url(url)
    try:
        found = {}
        for key in client.scan_iter(match=keys.job_prefix(job_id) + "*", count=1000):
            left = client.pttl(key)
            if left != -2:  # -2: expired between SCAN and PTTL
                found[key.decode()] = None if left == -1 else left / 1000
        return found
    finally:
        client.close()


SINGLE_KEYS = ("w:meta", "w:version", "r:config", "r:job", "r:result", "r:done", "events")  # a job's fixed names


def memcached_ttls(url: str, job_id: str, dumps: int = 3) -> dict[str, float | None]:
    """The union of a few metadumps: one crawl can miss an item the LRU moves between its segments meanwhile (seen:
    r:job missed by three in a row); a job's fixed names the crawls missed are asked for by name (`mg KEY t`)."""
    parsed = parse_store_url(url)
    prefix, found = keys.job_prefix(job_id), {}
    for line in [line for _ in range(dumps) for line in metadump(parsed.host, parsed.port)]:
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        key = urllib.parse.unquote(fields.get("key", ""))
        if key.startswith(prefix):
            exp = int(fields["exp"])
            found[key] = None if exp == -1 else exp - time.time()
    for name in SINGLE_KEYS:
        key = prefix + name
        if key not in found and (left := meta_ttl(parsed.host, parsed.port, key)) is not MISSING:
            found[key] = left
    return found


MISSING = object()


def meta_ttl(host: str, port: int, key: str, timeout_s: float = 10.0):
    """memcached's meta get with the t flag: the item's seconds left (None: no expiry), or MISSING."""
    with socket.create_connection((host, port), timeout=timeout_s) as conn:
        conn.sendall(f"mg {key} t\r\n".encode())
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = conn.recv(4096)
            if not chunk:
                raise ConnectionError("memcached closed the meta get")
            reply += chunk
    words = reply.decode().split()
    if words[0] == "EN":
        return MISSING
    left = int(next(word[1:] for word in words[1:] if word.startswith("t")))
    return None if left == -1 else float(left)


def metadump(host: str, port: int, timeout_s: float = 10.0) -> list[str]:
    """memcached's `lru_crawler metadump all`: one line per live item (expired ones are left out)."""
    with socket.create_connection((host, port), timeout=timeout_s) as conn:
        conn.sendall(b"lru_crawler metadump all\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            chunk = conn.recv(1 << 16)
            if not chunk:
                raise ConnectionError(f"memcached closed the metadump after {len(data)} bytes")
            if chunk.startswith(b"BUSY") or chunk.startswith(b"ERROR"):
                raise RuntimeError(f"memcached refused the metadump: {chunk[:80]!r}")
            data += chunk
    return [line for line in data.decode().splitlines() if line.startswith("key=")]


def memory_ttls(store, job_id: str) -> dict[str, float | None]:
    return store.client.expiries(keys.job_prefix(job_id))


def ttls_of(url: str, job_id: str) -> dict[str, float | None]:
    return (redis_ttls if url.startswith("redis://") else memcached_ttls)(url, job_id)


def write_every_kind(store, job_id: str, keep_s: int) -> None:
    """A job's worth of writes through the public API, each kind at least once (KINDS)."""
    store.put_record(job_id, keys.CONFIG, {"keep_s": keep_s})
    flat = np.zeros(2500, np.float32)
    chunk_floats, store.chunk_floats = store.chunk_floats, 1000  # three chunks: a push of one chunk keeps no copy
    try:  # on Memcached (its single cas applies all of it or none), and the push copy is a kind to list
        store.set_weights(job_id, flat, writers=1)
    finally:
        store.chunk_floats = chunk_floats
    record = {"pushes": 1, "owner": "call-a", "state": "running"}
    store.push_update(job_id, np.ones_like(flat), push_id=PushId(0, 1), record=record)
    store.push_update(job_id, np.ones_like(flat))
    store.update_worker(job_id, 0, {**record, "state": "finished"})
    store.put_record(job_id, keys.heartbeat_name(0), {"at": 1}, ttl_s=keep_s + 3600)  # capped at keep_s
    store.add_record(job_id, keys.lease_name(0, "loop"), {"owner": "call-a"}, ttl_s=keep_s + 3600)
    store.incr(job_id, keys.CONFLICTS, 2)
    for i in range(3):
        store.append_event(job_id, {"event": "tick", "i": i})
    store.put_blob(job_id, keys.residual_name(0, 1, "call-a"), b"x" * (BLOB_CHUNK_BYTES + 10))
    store.keep_copy(job_id, keys.LAST_PARAMS_COPY, flat)


def missing_kinds(ttls: dict, job_id: str, kinds=KINDS) -> list[str]:
    """The kinds of key no listed key starts with (after the job's prefix)."""
    names = [key[len(keys.job_prefix(job_id)):] for key in ttls]
    return [kind for kind in kinds if not any(name.startswith(kind) for name in names)]
