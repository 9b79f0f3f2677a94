"""Run a command with a store server of its own: `python -m faasgd.local.with_store redis -- CMD ...`.

Starts `redis-server` or `memcached` on a free loopback port, exports its URL as `store_url` (the
config key, so faasgd picks it up from the environment), runs the command, stops the server.
"""

from __future__ import annotations

import os
import subprocess
import sys

from faasgd.local.servers import start_memcached, start_redis

STARTERS = {"redis": start_redis, "memcached": start_memcached}


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in STARTERS or argv[1] != "--":
        print("usage: python -m faasgd.local.with_store redis|memcached -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    server = STARTERS[argv[0]]()
    print(f"started {server.name} at {server.url} (pid {server.pid})", flush=True)
    try:
        return subprocess.call(argv[2:], env={**os.environ, "store_url": server.url})
    except KeyboardInterrupt:
        return 130
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
