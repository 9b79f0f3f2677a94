"""Sparse pushes added inside Redis: a Redis function applies (index, value) pairs to the weight chunks.

A top-k push (push_codec.Sparse) travels as 8 bytes per entry, (uint32 index in its chunk, float32 value),
one argument per weight chunk, and one FCALL applies the whole push atomically: it reads the version and the
writers' records, decides as store/push.py does whether this push number is applied already, adds the pairs
by the job's update rule to the chunks they touch, writes the worker's record and INCRs the version. The
socket carries the pairs (and, when the caller wants the weights back, the chunks as the push left them),
not the whole chunks that today's client-side add reads and writes (redis_store.py `_push`).

One call per push, not per chunk: a push stays all-or-nothing (no half-applied push to roll forward, as
Memcached must) and the push id is decided once. The server is blocked while it runs, about 0.2 µs per
pair plus a copy of each touched chunk (512 KiB): `MAX_PAIRS` bounds a call to a few milliseconds; a push
with more pairs takes the client path (at that size its pairs are no smaller than the chunks anyway).

Exactness: Lua numbers are doubles. Each float32 operation of update_rule.py (+, /, x, sqrt of float32
operands) is done in double and rounded to float32 (struct.pack '<f'); double's 53 bits are at least
2 x 24 + 2, so that single rounding gives exactly the correctly rounded float32 result (Figueroa, "When is
double rounding innocuous?", 1995). So sum, average and adagrad all match the client path bit for bit, in
the same order of operations (tests/integration/test_sparse_real.py checks it on a real server). Entries
a push does not carry are left as stored: the client path adds 0.0 to them, which is the same bits for
every value but -0.0, and no weight is ever -0.0 unless set so (a sum is -0.0 only from two -0.0s).

Functions, not EVALSHA: a library is loaded once per server (FUNCTION LOAD REPLACE, here on the first
"Function not found", e.g. after a restart) and called by name; the name carries a hash of its source,
so a server never runs another version's code. A server without functions (Redis < 7, fakeredis without
Lua) answers "unknown command", and the store keeps the client path for good. Chunks are written with
KEEPTTL: a push leaves their expiry as set_weights gave it.
"""

from __future__ import annotations

import hashlib

import numpy as np
import redis

from faasgd.store import codec
from faasgd.store.push_codec import Sparse
from faasgd.store.update_rule import UpdateRule

MAX_PAIRS = 8192  # pairs in one call: its time blocks the single-threaded server (module docstring)
PAIR = np.dtype([("index", "<u4"), ("value", "<f4")])
NO_JOB, BAD = "FAASGD_NO_JOB", "FAASGD_BAD"  # the function's error replies

BODY = r"""
local function fround(x)
  return (struct.unpack('<f', struct.pack('<f', x)))
end

-- the new stored chunk: `raw` with the pairs of `blob` applied by the rule (w region, then adagrad's G region)
local function added(raw, blob, span, rule, c1, c2)
  local w_parts, g_parts, w_at, g_at, pos = {}, {}, 1, span * 4 + 1, 1
  for _ = 1, #blob / 8 do
    local index, d
    index, d, pos = struct.unpack('<I4f', blob, pos)
    if index >= span then return nil, 'pair index ' .. index .. ' beyond the chunk' end
    local off = index * 4 + 1
    local w, new = struct.unpack('<f', raw, off), nil
    if rule == 'adagrad' then
      local goff = off + span * 4
      local g = fround(d / c1)
      local s = fround(struct.unpack('<f', raw, goff) + fround(g * g))
      new = w + fround(d / fround(fround(math.sqrt(s)) + c2))
      g_parts[#g_parts + 1] = string.sub(raw, g_at, goff - 1)
      g_parts[#g_parts + 1] = struct.pack('<f', s)
      g_at = goff + 4
    elseif rule == 'average' then
      new = w + fround(d / c1)
    else
      new = w + d
    end
    w_parts[#w_parts + 1] = string.sub(raw, w_at, off - 1)
    w_parts[#w_parts + 1] = struct.pack('<f', new)
    w_at = off + 4
  end
  if rule == 'adagrad' then
    w_parts[#w_parts + 1] = string.sub(raw, w_at, span * 4)
    g_parts[#g_parts + 1] = string.sub(raw, g_at)
    return table.concat(w_parts) .. table.concat(g_parts)
  end
  w_parts[#w_parts + 1] = string.sub(raw, w_at)
  return table.concat(w_parts)
end

-- KEYS: version, [worker record], other writers' records, every weight chunk
-- ARGV: has_worker, others, want_chunks, seq, record, rule, c1, c2, length, chunk_floats, pairs per chunk...
local function sparse_add(keys, args)
  local has_worker, others, want = tonumber(args[1]), tonumber(args[2]), args[3] == '1'
  local seq, record, rule, c1, c2 = tonumber(args[4]), args[5], args[6], tonumber(args[7]), tonumber(args[8])
  local length, per_chunk = tonumber(args[9]), tonumber(args[10])
  local width, first = (rule == 'adagrad') and 2 or 1, 2 + has_worker + others
  local head = redis.call('MGET', unpack(keys, 1, first - 1))
  if not head[1] then return redis.error_reply('FAASGD_NO_JOB') end
  local chunk_keys = {unpack(keys, first)}
  for c = 1, #chunk_keys do
    local span = math.min(per_chunk, length - (c - 1) * per_chunk)
    local size = redis.call('STRLEN', chunk_keys[c])
    local name = 'FAASGD_BAD weight chunk ' .. (c - 1)
    if size == 0 then return redis.error_reply(name .. ' is missing (evicted or deleted?)') end
    if size ~= span * width * 4 then
      return redis.error_reply(name .. ' has ' .. size .. ' bytes, expected ' .. span * width * 4)
    end
  end
  local reply = {0, tonumber(head[1])}
  for i = 2, #head do reply[#reply + 1] = head[i] end
  if has_worker == 1 and head[2] then
    local ok, stored = pcall(cjson.decode, head[2])
    if not ok then return redis.error_reply('FAASGD_BAD worker record is not JSON') end
    local held = type(stored) == 'table' and math.floor(tonumber(stored.pushes) or 0) or 0
    if held >= seq then  -- this push number is in already: nothing is written
      if want then for _, chunk in ipairs(redis.call('MGET', unpack(chunk_keys))) do reply[#reply + 1] = chunk end end
      return reply
    end
  end
  local new = {}
  for c = 1, #chunk_keys do
    local blob = args[10 + c]
    if #blob > 0 then
      local span = math.min(per_chunk, length - (c - 1) * per_chunk)
      local chunk, why = added(redis.call('GET', chunk_keys[c]), blob, span, rule, c1, c2)
      if not chunk then return redis.error_reply('FAASGD_BAD weight chunk ' .. (c - 1) .. ': ' .. why) end
      new[c] = chunk
    end
  end
  for c, chunk in pairs(new) do redis.call('SET', chunk_keys[c], chunk, 'KEEPTTL') end
  if has_worker == 1 then redis.call('SET', keys[2], record) end
  reply[1], reply[2] = 1, redis.call('INCR', keys[1])
  if want then
    for c = 1, #chunk_keys do reply[#reply + 1] = new[c] or redis.call('GET', chunk_keys[c]) end
  end
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

    def call(self, client: redis.Redis, keys: list[str], args: list, resend: bool) -> list:
        """FCALL the library (once more after loading it); `resend`: redis-py may resend it after a dropped
        connection (safe with a push id); otherwise it is sent once. Unsupported when the server has no functions."""
        for loaded in (False, True):
            try:
                return self._send(client, ["FCALL", FUNCTION, len(keys), *keys, *args], resend)
            except redis.ResponseError as e:
                if not loaded and "function not found" in str(e).lower():
                    self._load(client)
                    continue
                self._check_supported(e)
                raise
        raise AssertionError("unreachable")

    def _load(self, client: redis.Redis) -> None:
        try:
            client.execute_command("FUNCTION", "LOAD", "REPLACE", LIBRARY)
        except redis.ResponseError as e:
            self._check_supported(e)
            raise

    def _check_supported(self, error: redis.ResponseError) -> None:
        text = str(error).lower()
        if text.startswith("unknown command") or text.startswith("noperm") or "unknown subcommand" in text:
            self.supported = False
            raise Unsupported(str(error)) from error

    @staticmethod
    def _send(client: redis.Redis, command: list, resend: bool):
        if resend:
            return client.execute_command(*command)
        pool = client.connection_pool
        connection = pool.get_connection()
        try:
            connection.send_command(*command)
            return client.parse_response(connection, command[0])
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            connection.disconnect()  # a reply may still come: never reuse this connection
            raise
        finally:
            pool.release(connection)
