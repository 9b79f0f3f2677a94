"""Sparse pushes added inside Redis: a Redis function applies (index, value) pairs to the weight chunks.

A top-k push (push_codec.Sparse) travels as 8 bytes per entry, (uint32 index in its chunk, float32 value),
one argument per weight chunk, and one FCALL applies the whole push atomically: it reads the version and the
writers' records, decides as store/push.py does whether this push number is applied already, adds the pairs
by the job's update rule to the entries they name, writes the worker's record and INCRs the version. The
entries are written with BITFIELD (u32 fields holding the float32 bits) and read with BITFIELD_RO, or, when
a push names more than ~1.5% of a chunk's weights, from one GET of the chunk (copying a long string into Lua
costs about 1.3 ns a byte, a BITFIELD field about 0.7 µs). When the caller wants the weights
back (a worker's push serves its next fetch), an MGET of the chunks follows in the same MULTI/EXEC, so
they come straight from Redis. The socket carries the pairs (and those chunks), not the whole chunks that
the client-side add reads and writes (redis_store.py `_push`).

One call per push, not per chunk: a push stays all-or-nothing (no half-applied push to roll forward, as
Memcached must) and its push id is decided once; every check (the job, each chunk's size, each index)
comes before the first write, since a function's writes are not rolled back by a later error. The server
is blocked while it runs, in proportion to the pairs: about 1.3-2.5 µs a pair on the shared 2-core VM (Lua
in Redis is slow beside numpy: a 796-pair push of the 79,510-weight MLP takes ~1.7 ms, 7,951 pairs ~10 ms,
the client-side add of the whole vector 1.3-1.6 ms on loopback; the function wins where bytes cost, not
CPU). `MAX_PAIRS` bounds a call to about 10-20 ms; a push with more pairs takes the client path.

Exactness: Lua numbers are doubles. Each float32 operation of update_rule.py (+, /, x, sqrt of float32
operands) is done in double and rounded to float32 (struct.pack '<f'); double's 53 bits are at least
2 x 24 + 2, so that single rounding gives exactly the correctly rounded float32 result (Figueroa, "When is
double rounding innocuous?", 1995). So sum, average and adagrad all match the client path bit for bit, in
the same order of operations (tests/integration/test_sparse_real.py checks it on a real server, with
values from ~1e3 down to subnormals). Entries a push does not carry are left as stored: the
client path adds 0.0 to them, the same bits for every value but -0.0 (which it makes +0.0), and no stored
weight is -0.0 unless set_weights wrote one (a float32 sum is -0.0 only from two -0.0s).

Functions, not EVALSHA: a library is loaded once per server (FUNCTION LOAD REPLACE, here on the first
"Function not found", e.g. after a restart) and called by name; the name carries a hash of its source, so
a server never runs another version's code. A server without functions (Redis < 7, fakeredis without Lua)
answers "unknown command", and the store keeps the client path for good.
"""

from __future__ import annotations

import hashlib

import numpy as np
from faasgd.store.redis_lib import redis

from faasgd.store import codec
from faasgd.store.push_codec import Sparse
from faasgd.store.update_rule import UpdateRule

MAX_PAIRS = 8192  # pairs in one call: its time blocks the single-threaded server (module docstring)
PAIR = np.dtype([("index", "<u4"), ("value", "<f4")])
NO_JOB, BAD = "FAASGD_NO_JOB", "FAASGD_BAD"  # the function's error replies

BODY = r"""
local BATCH = 1000  -- fields per BITFIELD call: Lua's unpack passes at most ~8000 values

local function fround(x)
  return (struct.unpack('<f', struct.pack('<f', x)))
end

-- a float32 as BITFIELD's u32 reads it (bits in big-endian order) and back
local function float_of(u) return (struct.unpack('<f', struct.pack('>I4', u))) end
local function u32_of(x) return (struct.unpack('>I4', struct.pack('<f', x))) end

-- the pairs of `blob` as bit offsets and values; an error message if one lies beyond the chunk's `span`
local function parsed(blob, span)
  local bits, values, pos = {}, {}, 1
  for i = 1, #blob / 8 do
    local index
    index, values[i], pos = struct.unpack('<I4f', blob, pos)
    if index >= span then return nil, nil, 'pair index ' .. index .. ' beyond the chunk' end
    bits[i] = index * 32
  end
  return bits, values
end

-- the stored float32 values of entries a..b (and adagrad's G after them): from `raw`, the whole chunk read once,
-- when the pairs are dense enough to pay for copying it into Lua, else one BITFIELD_RO
local function stored(key, raw, bits, a, b, g_bits, adagrad)
  local old, n = {}, 0
  if raw then
    for i = a, b do
      old[n + 1], n = struct.unpack('<f', raw, bits[i] / 8 + 1), n + 1
      if adagrad then old[n + 1], n = struct.unpack('<f', raw, (bits[i] + g_bits) / 8 + 1), n + 1 end
    end
    return old
  end
  local get = {}
  for i = a, b do
    get[n + 1], get[n + 2], get[n + 3], n = 'GET', 'u32', bits[i], n + 3
    if adagrad then get[n + 1], get[n + 2], get[n + 3], n = 'GET', 'u32', bits[i] + g_bits, n + 3 end
  end
  for i, u in ipairs(redis.call('BITFIELD_RO', key, unpack(get))) do old[i] = float_of(u) end
  return old
end

-- BITFIELD's SET fields for entries a..b with their pairs added by the rule (w, and adagrad's G after the weights)
local function updated(key, raw, bits, values, a, b, g_bits, rule, c1, c2)
  local adagrad = rule == 'adagrad'
  local old, set, m, stride = stored(key, raw, bits, a, b, g_bits, adagrad), {}, 0, adagrad and 2 or 1
  for i = a, b do
    local w, d = old[(i - a) * stride + 1], values[i]
    local new
    if adagrad then
      local g = fround(d / c1)
      local s = fround(old[(i - a) * 2 + 2] + fround(g * g))
      new = w + fround(d / fround(fround(math.sqrt(s)) + c2))
      set[m + 1], set[m + 2], set[m + 3], set[m + 4], m = 'SET', 'u32', bits[i] + g_bits, u32_of(s), m + 4
    elseif rule == 'average' then
      new = w + fround(d / c1)
    else
      new = w + d
    end
    set[m + 1], set[m + 2], set[m + 3], set[m + 4], m = 'SET', 'u32', bits[i], u32_of(new), m + 4
  end
  return set
end

-- KEYS: version, [worker record], other writers' records, every weight chunk
-- ARGV: has_worker, others, seq, record, rule, c1, c2, length, chunk_floats, the record's expiry (s; 0: none),
--       pairs per chunk...
local function sparse_add(keys, args)
  local has_worker, others, seq, record = tonumber(args[1]), tonumber(args[2]), tonumber(args[3]), args[4]
  local rule, c1, c2 = args[5], tonumber(args[6]), tonumber(args[7])
  local length, per_chunk, expiry = tonumber(args[8]), tonumber(args[9]), tonumber(args[10])
  local width, first = (rule == 'adagrad') and 2 or 1, 2 + has_worker + others
  local head = redis.call('MGET', unpack(keys, 1, first - 1))
  if not head[1] then return redis.error_reply('FAASGD_NO_JOB') end
  local chunks = {}  -- every check before the first write: an error leaves nothing half-done
  for c = 1, #keys - first + 1 do
    local span, name = math.min(per_chunk, length - (c - 1) * per_chunk), 'FAASGD_BAD weight chunk ' .. (c - 1)
    local size = redis.call('STRLEN', keys[first + c - 1])
    if size == 0 then return redis.error_reply(name .. ' is missing (evicted or deleted?)') end
    if size ~= span * width * 4 then
      return redis.error_reply(name .. ' has ' .. size .. ' bytes, expected ' .. span * width * 4)
    end
    local bits, values, why = parsed(args[10 + c], span)
    if why then return redis.error_reply(name .. ': ' .. why) end
    local dense = #bits * 256 >= size  -- above ~1.5% of a chunk's weights one GET reads faster than BITFIELD_RO
    chunks[c] = {key = keys[first + c - 1], bits = bits, values = values, g_bits = span * 32, dense = dense}
  end
  local reply = {0, tonumber(head[1])}
  for i = 2, #head do reply[#reply + 1] = head[i] end
  if has_worker == 1 and head[2] then
    local ok, stored = pcall(cjson.decode, head[2])
    if not ok then return redis.error_reply('FAASGD_BAD worker record is not JSON') end
    if (type(stored) == 'table' and math.floor(tonumber(stored.pushes) or 0) or 0) >= seq then
      return reply  -- this push number is in already: nothing is written
    end
  end
  for _, chunk in ipairs(chunks) do
    local raw = chunk.dense and redis.call('GET', chunk.key) or nil  -- read before the chunk's first write
    for a = 1, #chunk.bits, BATCH do
      local b = math.min(a + BATCH - 1, #chunk.bits)
      local set = updated(chunk.key, raw, chunk.bits, chunk.values, a, b, chunk.g_bits, rule, c1, c2)
      redis.call('BITFIELD', chunk.key, unpack(set))
    end
  end
  if has_worker == 1 then
    if expiry > 0 then redis.call('SET', keys[2], record, 'EX', expiry) else redis.call('SET', keys[2], record) end
  end
  reply[1], reply[2] = 1, redis.call('INCR', keys[1])
  return reply
end
"""
DIGEST = hashlib.sha1(BODY.encode()).hexdigest()[:12]
FUNCTION = f"faasgd_sparse_add_{DIGEST}"
LIBRARY = f"#!lua name=faasgd_sparse_{DIGEST}\n{BODY}\nredis.register_function('{FUNCTION}', sparse_add)\n"


def pairs_by_chunk(payload: Sparse, meta: codec.WeightsMeta) -> list[bytes]:
    """The push's pairs split by weight chunk, indices made chunk-relative: one bytes argument per chunk."""
    bounds = np.searchsorted(payload.indices, [meta.span(c).start for c in range(meta.chunks)] + [meta.length])
    out = []
    for c in range(meta.chunks):
        a, b = bounds[c], bounds[c + 1]
        pairs = np.empty(b - a, PAIR)
        pairs["index"] = payload.indices[a:b] - np.uint32(meta.span(c).start)
        pairs["value"] = payload.values[a:b]
        out.append(pairs.tobytes())
    return out


def rule_arguments(rule: UpdateRule) -> list[str]:
    """(name, c1, c2): average's divisor, adagrad's -learning_rate and eps, each as the float32 the client uses."""
    c1 = {"average": rule.workers, "adagrad": -rule.learning_rate}.get(rule.name, 0.0)
    c2 = rule.eps if rule.name == "adagrad" else 0.0
    return [rule.name, repr(float(np.float32(c1))), repr(float(np.float32(c2)))]


class Unsupported(Exception):
    """The server has no functions (or may not load them): the caller adds on the client instead."""


class ServerAdd:
    """Calls the library on one store's client: loads it when the server lacks it, remembers a server without it."""

    def __init__(self) -> None:
        self.supported = True

    def takes(self, payload) -> bool:
        return self.supported and isinstance(payload, Sparse) and payload.indices.size <= MAX_PAIRS

    def call(self, client: redis.Redis, keys: list[str], args: list, read: list[str],
             resend: bool) -> tuple[list, list]:
        """FCALL the library and MGET `read` after it, in one MULTI/EXEC (the chunks come straight from Redis, not
        through Lua): (the function's reply, the values read). Loaded and called again when the server lacks it;
        `resend`: sent once more after a dropped connection (safe with a push id), else sent once. Unsupported
        when the server has no functions; the function's own error replies raise ResponseError."""
        commands = [["FCALL", FUNCTION, len(keys), *keys, *args], *([["MGET", *read]] if read else [])]
        for loaded in (False, True):
            try:
                replies = self._transaction(client, commands, resend)
            except redis.ResponseError as e:  # refused as it was queued: no such command
                self._check_supported(e)
                raise
            if not isinstance(replies[0], redis.ResponseError):
                return replies[0], replies[1] if read else []
            if loaded or "function not found" not in str(replies[0]).lower():
                raise replies[0]
            self._load(client)
        raise AssertionError("unreachable")

    def _load(self, client: redis.Redis) -> None:
        try:
            client.execute_command("FUNCTION", "LOAD", "REPLACE", LIBRARY)
        except redis.ResponseError as e:
            self._check_supported(e)
            raise

    def _check_supported(self, error: redis.ResponseError) -> None:
        text = str(error).lower()
        if text.startswith(("unknown command", "noperm")) or "unknown subcommand" in text:
            self.supported = False
            raise Unsupported(str(error)) from error

    @staticmethod
    def _transaction(client: redis.Redis, commands: list[list], resend: bool) -> list:
        """MULTI, `commands`, EXEC on one connection in one round trip: EXEC's replies (errors as values)."""
        pool = client.connection_pool
        for attempt in (1, 2):
            connection = pool.get_connection()
            try:
                connection.send_packed_command(connection.pack_commands([["MULTI"], *commands, ["EXEC"]]))
                queued = []
                for _ in range(len(commands) + 1):  # +OK, then +QUEUED or a refusal per command: every one read
                    try:
                        queued.append(connection.read_response())
                    except redis.ResponseError as e:
                        queued.append(e)
                try:
                    replies = connection.read_response()
                except redis.ResponseError:  # EXECABORT: a command was refused as it was queued
                    raise next(r for r in queued if isinstance(r, redis.ResponseError)) from None
                return replies
            except (redis.ConnectionError, OSError):
                connection.disconnect()  # a reply may still come: never reuse this connection
                if not resend or attempt == 2:
                    raise
            except redis.TimeoutError:
                connection.disconnect()
                raise
            finally:
                pool.release(connection)
        raise AssertionError("unreachable")
