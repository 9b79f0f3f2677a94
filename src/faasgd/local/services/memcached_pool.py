"""A pool of memcached servers on loopback ports, started and stopped as one store (`memcached://H:P1,H:P2,...`).

    pool = start_memcached_pool(servers=3)
    store = faasgd.store.open_store(pool.url)   # keys spread over the three by hashing (store/memcached_pool.py)
    pool.stop()

Each member is a plain memcached of faasgd.local.services.stores.start_memcached (TCP only, its own free port); the pool
is those servers and one URL naming them all, in the order started.
"""

from __future__ import annotations

from faasgd.checks import whole_number
from faasgd.local.services.store_groups import ServerGroup, group_url
from faasgd.local.services.stores import ServerProcess, start_memcached

NAME = "memcached-pool"
MAX_SERVERS = 16  # a local pool: a handful of processes on one host


def start_memcached_pool(servers: int = 3, item_size: str = "2m", memory_mb: int = 256,
                         also_bind: str | None = None) -> ServerGroup:
    """Start `servers` memcached processes (each `item_size` item limit, `memory_mb` of memory, on 127.0.0.1 and
    `also_bind`); return once every one answers. If one fails to start, those started are stopped again."""
    whole_number(servers, "servers", low=1, high=MAX_SERVERS, must=f"an integer 1-{MAX_SERVERS}")
    started: list[ServerProcess] = []
    try:
        for _ in range(servers):
            started.append(start_memcached(item_size=item_size, memory_mb=memory_mb, also_bind=also_bind))
    except BaseException:
        ServerGroup(NAME, "", started).stop()
        raise
    return ServerGroup(NAME, group_url("memcached", started), started)
