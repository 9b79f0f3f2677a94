"""redis://[[user]:password@]host:port/db — parameters and records in Redis.

Weights: `w:meta` (JSON), `w:version` (counter), `w:{i}` (float32 chunks). A fetch is one MGET of
the version and every chunk (and, for a worker's fetch, the writers' records: the steps the
weights hold, push.py): one atomic command, so a consistent snapshot.

push_update is an optimistic transaction: WATCH the version key, MGET the chunks, add the delta in
numpy, then MULTI / SET each chunk / SET the record / [INCRBY the job's conflicts /] INCR version / EXEC, sent
on one of redis-py's connections without its Pipeline (redis_push.py: half of a push's client CPU). Every writer
of the chunks (set_weights and push_update) also writes the version key inside its MULTI, so EXEC
fails whenever anything changed in between (WatchError): that is a conflict, redone under the
retry policy's bounds; the conflicts a push lost are added to the job's counter in its winning EXEC.
That is the path of dense pushes (f32, f16): Lua cannot add float32 arrays except value by value
(struct.unpack), which would block the single-threaded server for ~100 ms per push on 300k floats; with
WATCH the adding happens on the workers and the server only moves bytes. A sparse (top-k) push is the
opposite case: a few pairs against whole chunks, so it is added inside Redis by a Redis function, in one
atomic call with the same push id and record (redis_sparse.py; the client path where the server has none).

Failure semantics: a dropped connection is reconnected once (redis-py's Retry for plain commands; the push
itself for its own exchanges, before its commit); a timeout surfaces at once. If the connection is lost while
EXEC is in flight the push's outcome is unknown, so it is not retried: StoreUnavailable says so.
Records are plain string keys with JSON (SET EX, SET NX EX, MGET, INCRBY); events a list (RPUSH, LRANGE).
Every write carries the job's expiry (store/expiry.py): SET ... EX, or EXPIRE in the same MULTI after MSET,
INCRBY and RPUSH.
"""

from __future__ import annotations

import socket

import numpy as np
from faasgd.store.redis_lib import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.connection import PythonRespSerializer
from redis.retry import Retry

from faasgd.errors import FaasgdError, JobNotFound, StoreError, StoreTimeout, StoreUnavailable
from faasgd.store import codec, keys, meter, redis_push, redis_sparse, server_cpu
from faasgd.store.base import ParameterStore, writer_keys
from faasgd.store.push import APPLY, SUPERSEDED, LostRace, Push, PushId, decide, steps_of
from faasgd.store.url import StoreUrl


LARGE_VALUE_BYTES = 6000  # redis-py's own cutoff: longer values go to the socket unjoined


def expire(pipe, names: list[str], ttl_s: int) -> None:
    """Queue an EXPIRE of each key on `pipe`: after MSET, INCRBY or RPUSH in the same MULTI, none of which
    can carry an expiry (MSET and SET without EX even drop one; store/expiry.py)."""
    for name in names:
        pipe.expire(name, ttl_s)


def connect(url: StoreUrl, password: str | None, timeout_s: float) -> redis.Redis:
    """A redis-py client for `url` (lazy: no connection until the first command)."""
    client = redis.Redis(
        host=url.host,
        port=url.port,
        db=url.db,
        username=url.username,
        password=password,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        # one reconnect after a dropped connection (server restart, idle close); timeouts surface at once
        retry=Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.1), 1, (redis.ConnectionError,)),
    )
    send_large_values_as_they_are(client)
    meter.count_redis(client)  # bytes on its sockets, per thread (resource profiles)
    return client


def send_large_values_as_they_are(client: redis.Redis) -> None:
    """Make `client`'s connections pack commands in Python, which hands a value over 6,000 bytes (a weight chunk)
    to the socket as it is. Replies are still parsed by hiredis when it is installed (a dependency: a fetch's
    318 KB of chunks in ~0.2 ms of CPU instead of ~0.8 ms in redis-py's own parser), but redis-py would also pack
    with hiredis then, which copies every value into one new buffer (~0.4 ms a push of 318 KB)."""
    pool = client.connection_pool
    pool.connection_kwargs["command_packer"] = PythonRespSerializer(LARGE_VALUE_BYTES, pool.get_encoder().encode)


class RedisStore(ParameterStore):
    """ParameterStore over Redis; `client` may be any redis.Redis-compatible object returning bytes."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._server_add = redis_sparse.ServerAdd()  # sparse pushes added inside Redis, where it can

    def _map(self, error: BaseException, detail: str = "") -> StoreError | None:
        """The StoreError for a redis-py or socket exception (this backend's one mapping table)."""
        text = f"{type(error).__name__}: {error}" + (f"; {detail}" if detail else "")
        if isinstance(error, redis.AuthenticationError):
            return StoreUnavailable(self.url, f"authentication failed ({error})")
        if isinstance(error, (redis.TimeoutError, socket.timeout)):
            return StoreTimeout(self.url, text)
        if isinstance(error, (redis.ConnectionError, OSError)):
            return StoreUnavailable(self.url, text)
        if isinstance(error, redis.RedisError):
            return StoreError(self.url, text)
        return None

    def _ping(self) -> None:
        self.client.ping()

    clock_resolution_s = 1e-6  # TIME: seconds and microseconds
    server_clock = "redis TIME (1 µs)"

    def _server_time(self) -> float:
        seconds, micros = self.client.time()
        return seconds + micros / 1e6

    def _write_weights(self, job_id: str, meta: bytes, chunks: list[bytes], version: int, ttl_s: int) -> None:
        chunk_keys = keys.weights_chunks(job_id, len(chunks))
        with self.client.pipeline(transaction=True) as pipe:
            if chunks:
                pipe.mset(dict(zip(chunk_keys, chunks)))
                expire(pipe, chunk_keys, ttl_s)
            pipe.set(keys.weights_meta(job_id), meta, ex=ttl_s)
            pipe.set(keys.weights_version(job_id), str(version).encode(), ex=ttl_s)  # aborts any push WATCHing it
            pipe.execute()

    def _get_many(self, names: list[str]) -> list[bytes | None]:
        return self.client.mget(names)

    def _push(self, job_id: str, meta: codec.WeightsMeta, delta: np.ndarray, push_id: PushId | None,
              record: dict | None, out: np.ndarray | None = None) -> tuple[Push, list | None]:
        """The dense push (module docstring). With `out`, the new weights are added straight into it and sent from
        it (codec.add_into): the chunks returned are then None when this push applied the delta, the stored ones
        when an earlier attempt had (a resend), to be decoded as a fetch's. After an error `out` holds any values."""
        target = np.empty(meta.length, np.float32) if out is None else out
        version_key = keys.weights_version(job_id)
        chunk_keys = keys.weights_chunks(job_id, meta.chunks)
        worker_key = [keys.worker(job_id, push_id.worker)] if push_id else []
        others = [k for k in writer_keys(job_id, meta) if k not in worker_key]  # their steps: read, WATCHed by version
        seen = {"conflicts": 0, "reconnected": False}
        ttl_s = self._expiry(job_id)
        conflicts_key = keys.counter(job_id, keys.CONFLICTS)
        reads = [("WATCH", version_key, *worker_key), ("MGET", version_key, *worker_key, *others, *chunk_keys)]

        def attempt() -> tuple[int, int, list[bytes], str]:
            with redis_push.connection(self.client) as conn:
                try:
                    raw = redis_push.exchange(conn, reads)[1]
                except (redis.ConnectionError, redis.TimeoutError, OSError) as lost:
                    conn.disconnect()
                    if isinstance(lost, redis.TimeoutError) or seen["reconnected"]:
                        raise self._map(lost, "connection lost during push_update; not applied") from lost
                    seen["reconnected"] = True  # a dropped connection (a restarted server, an idle close): once more
                    raise LostRace from None
                if raw[0] is None:
                    raise JobNotFound(job_id)
                chunks = raw[1 + len(worker_key) + len(others):]
                steps = self._steps(raw[1 + len(worker_key):1 + len(worker_key) + len(others)])
                if push_id is not None:
                    stored = self._decode(codec.record_from_bytes, raw[1], "worker record")
                    outcome = decide(stored, push_id, record)
                    if outcome != APPLY:  # decided: only the WATCH is left to clear, or the connection to drop
                        try:
                            redis_push.exchange(conn, [("UNWATCH",)])
                        except (redis.ConnectionError, redis.TimeoutError, OSError):
                            conn.disconnect()
                        return int(raw[0]), steps + steps_of([stored]), chunks, outcome
                self._after_read(job_id)
                new = [self._added_into(job_id, raw, delta, meta, i, target) for i, raw in enumerate(chunks)]
                commit = [("MULTI",), *(("SET", key, chunk, "EX", ttl_s) for key, chunk in zip(chunk_keys, new))]
                if push_id is not None:  # the worker's record, in the same transaction as the add
                    commit.append(("SET", worker_key[0], codec.record_to_bytes(record), "EX", ttl_s))
                if seen["conflicts"]:  # the store's count, likewise
                    commit.append(("INCRBY", conflicts_key, seen["conflicts"]))
                commit += [("EXPIRE", conflicts_key, ttl_s), ("EXPIRE", version_key, ttl_s), ("INCR", version_key),
                           ("EXEC",)]  # INCR keeps the expiry just set
                try:
                    done = redis_push.exchange(conn, commit)[-1]
                except (redis.ConnectionError, redis.TimeoutError, OSError) as lost:
                    conn.disconnect()
                    raise self._map(lost, "connection lost during push_update; it may or may not have been applied "
                                          "(a push id makes a resend safe)") from lost
            if done is None:  # EXEC refused: the version or the record changed since the WATCH
                seen["conflicts"] += 1
                raise LostRace
            failed = next((reply for reply in done if isinstance(reply, redis.ResponseError)), None)
            if failed is not None:
                raise failed
            return int(done[-1]), steps + steps_of([record]), None if out is not None else new, APPLY

        (version, steps, chunks, outcome), retries = self._until_won(attempt, job_id)
        return Push(version, seen["conflicts"], retries, applied=outcome != SUPERSEDED, steps=steps), chunks

    def _push_payload(self, job_id: str, meta: codec.WeightsMeta, payload, delta: np.ndarray,
                      push_id: PushId | None, record: dict | None, out: np.ndarray | None) -> tuple[Push, list | None]:
        """A sparse push is added inside Redis (redis_sparse.py) where the server can; anything else by `_push`."""
        if self._server_add.takes(payload):
            try:
                return self._push_on_server(job_id, meta, payload, push_id, record, out is not None)
            except redis_sparse.Unsupported:
                pass  # no functions on this server: the client path, from now on
        return self._push(job_id, meta, delta, push_id, record, out)

    def _push_on_server(self, job_id: str, meta: codec.WeightsMeta, payload, push_id: PushId | None,
                        record: dict | None, returning: bool) -> tuple[Push, list[bytes]]:
        worker_key = [keys.worker(job_id, push_id.worker)] if push_id else []
        others = [k for k in writer_keys(job_id, meta) if k not in worker_key]
        chunk_keys = keys.weights_chunks(job_id, meta.chunks)
        args = [len(worker_key), len(others), push_id.seq if push_id else 0,
                codec.record_to_bytes(record) if push_id else b"", *redis_sparse.rule_arguments(meta.rule),
                meta.length, meta.chunk_floats, self._expiry(job_id), *redis_sparse.pairs_by_chunk(payload, meta)]
        try:
            reply, chunks = self._server_add.call(self.client, [keys.weights_version(job_id), *worker_key, *others,
                                                                *chunk_keys], args, chunk_keys if returning else [],
                                                  resend=push_id is not None)
        except redis.ResponseError as e:
            raise self._refused(job_id, e) from None
        except (redis.ConnectionError, redis.TimeoutError, OSError) as e:
            raise self._map(e, "connection lost during push_update; it may or may not have been applied"
                               + (" (a push id makes a resend safe)" if push_id is None else "")) from e
        applied, version, stored = bool(reply[0]), int(reply[1]), reply[2:2 + len(worker_key)]
        steps = self._steps(reply[2 + len(worker_key):])
        if applied:
            return Push(version, 0, 0, steps=steps + steps_of([record])), chunks
        stored_record = self._decode(codec.record_from_bytes, stored[0], "worker record")
        outcome = decide(stored_record, push_id, record)
        return Push(version, 0, 0, applied=outcome != SUPERSEDED, steps=steps + steps_of([stored_record])), chunks

    def _refused(self, job_id: str, error: redis.ResponseError) -> FaasgdError:
        """The function's error reply as the store's error: JobNotFound, or StoreError naming the job."""
        text = str(error)
        if text.startswith(redis_sparse.NO_JOB):
            return JobNotFound(job_id)
        return StoreError(self.url, f"job {job_id!r}: {text.removeprefix(redis_sparse.BAD).strip()}")

    def _update_worker(self, key: str, data: bytes, allowed, ttl_s: int) -> bool:
        while True:
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(key)
                    if not allowed(self._decode(codec.record_from_bytes, pipe.get(key), "worker record")):
                        return False
                    pipe.multi()
                    pipe.set(key, data, ex=ttl_s)
                    pipe.execute()
                    return True
                except redis.WatchError as e:
                    if e.__context__ is not None:  # the connection went: let the caller's retry decide
                        raise self._map(e.__context__, "connection lost while writing a worker record") from None

    def _put(self, key: str, data: bytes, ttl_s: int) -> None:
        self.client.set(key, data, ex=ttl_s)

    def _add(self, key: str, data: bytes, ttl_s: int) -> bool:
        return bool(self.client.set(key, data, ex=ttl_s, nx=True))

    def _delete(self, key: str) -> None:
        self.client.delete(key)

    def _touch(self, names: list[str], ttl_s: int) -> None:
        """Only keys with less than half of `ttl_s` left (or, by a writer that forgot it, none): an EXPIRE counts
        as a write to a WATCH, and a key a push writes (the version WATCHed by every push) always has more."""
        with self.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.pttl(name)
            left = pipe.execute()
        due = [name for name, ms in zip(names, left) if ms == -1 or 0 <= ms < ttl_s * 500]
        if due:
            with self.client.pipeline(transaction=False) as pipe:
                expire(pipe, due, ttl_s)
                pipe.execute()

    def _incr(self, key: str, by: int, ttl_s: int) -> int:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.incrby(key, by)
            pipe.expire(key, ttl_s)
            return int(pipe.execute()[0])

    def _append_event(self, job_id: str, data: bytes, ttl_s: int) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.rpush(keys.events(job_id), data)
            pipe.expire(keys.events(job_id), ttl_s)
            pipe.execute()

    def _events(self, job_id: str, start: int) -> list[bytes]:
        return self.client.lrange(keys.events(job_id), start, -1)

    def _close(self) -> None:
        self.client.close()

    def _server_cpu_s(self) -> float | None:
        """INFO cpu: used_cpu_user + used_cpu_sys (None when the server refuses INFO: renamed, or denied by an ACL)."""
        try:
            return server_cpu.redis_cpu_s(self.client.info("cpu"))
        except redis.ResponseError:
            return None
