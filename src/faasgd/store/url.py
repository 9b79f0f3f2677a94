"""Store URLs: parse `redis://`, `redis-cluster://`, `memcached://` and `memory://` into a StoreUrl; mask passwords.

A store of several servers names them all, comma-separated: `redis-cluster://[[user]:password@]H1:P1,H2:P2`
(seed nodes of one Redis Cluster; the client learns the rest from them) and `memcached://H1:P1,H2:P2` (a pool:
every key lives on one of them, chosen by hashing). `redis://` names one server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from faasgd.errors import ConfigError

SCHEMES = ("redis", "redis-cluster", "memcached", "memory")
DEFAULT_PORTS = {"redis": 6379, "redis-cluster": 6379, "memcached": 11211}
EXAMPLE = ("redis://[:password@]host:6379/0, redis-cluster://[:password@]host:6379[,host:port...], "
           "memcached://host:11211[,host:port...] or memory://name")
MAX_NODES = 64  # servers one URL may name
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")  # memory:// space names
_SCHEME = r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://"  # where a URL starts (not inside a longer word)
_URL = re.compile(_SCHEME + r"[^\s'\"<>`]+")  # a URL in text, up to a space or a quote
# what is left of a user-info a URL's pattern split (a password holding a space, a '/' or an '@'): from a scheme
# to the last '@' before a quote, a line's end or the next scheme, with a ':' in it
_SPLIT_USERINFO = re.compile(rf"({_SCHEME})((?:(?!{_SCHEME})[^:'\"<>`\n])*):((?:(?!{_SCHEME})[^'\"<>`\n])*)@")
_CUT_USERINFO = re.compile(rf"({_SCHEME})((?:(?!{_SCHEME})[^:'\"<>`\n])*):(?:(?!{_SCHEME})[^'\"<>`\n@])*\Z")


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store URL; `masked` is the form to print (password replaced by ***)."""

    scheme: str  # redis, redis-cluster, memcached or memory
    host: str  # server host (the first one named), or the space name for memory://
    port: int  # its port; 0 for memory://
    db: int  # Redis database number; 0 elsewhere
    username: str | None  # Redis ACL user, if given
    password: str | None  # Redis password from the URL, if given
    masked: str  # the URL with any password replaced by ***
    nodes: tuple[tuple[str, int], ...] = ()  # every (host, port) named, in order; () for memory://


def mask_password(url: str) -> str:
    """`url` with the password of its user-info replaced by ***, the user name kept (a Redis ACL user says which
    login failed); works on malformed URLs too. The S3 channel hides the whole user-info instead (its mask_url):
    there a key is the user name."""
    scheme, sep, rest = str(url).partition("://")
    if not sep:
        return str(url)
    netloc_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    netloc, tail = rest[:netloc_end], rest[netloc_end:]
    userinfo, at, hostport = netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return str(url)
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:***@{hostport}{tail}"


def mask_urls(text: str, cut: bool = False) -> str:
    """`text` with the password of every URL in it masked (mask_password), for messages that may quote what a
    caller sent: a password the URL's pattern cannot delimit (a space, '/' or '@' in it) is masked up to the last
    '@' before the quote or line's end that closes it (more is masked than the password then, never less).
    `cut`: the text is the start of a longer one, so a user-info running to its end is masked to its end."""
    text = _URL.sub(lambda m: mask_password(m.group()), str(text))
    text = _SPLIT_USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2)}:***@", text)
    return _CUT_USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2)}:***", text) if cut else text


def parse_store_url(url: str) -> StoreUrl:
    """Parse and validate a store URL; every problem is a ConfigError naming `store_url`."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigError("store_url", f"expected a URL like {EXAMPLE}, got {url!r}")
    masked = mask_password(url)
    if "://" not in url:
        raise ConfigError("store_url", f"missing scheme (allowed: {', '.join(SCHEMES)}), got {masked!r}")
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise ConfigError(
            "store_url", f"unknown scheme {scheme!r} (allowed: {', '.join(SCHEMES)}), got {masked!r}"
        )
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise ConfigError("store_url", f"query parameters and fragments are not supported, got {masked!r}")
    if scheme == "memory":
        return _memory(parts, masked)
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    nodes = _nodes(hostlist, scheme, masked)
    host, port = nodes[0]
    username = unquote(parts.username) if userinfo and parts.username else None
    password = unquote(parts.password) if userinfo and parts.password else None
    if scheme == "memcached":
        if userinfo:
            raise ConfigError(
                "store_url", f"memcached has no authentication; remove the credentials from {masked!r}"
            )
        if parts.path not in ("", "/"):
            raise ConfigError("store_url", f"memcached URLs take no path, got {parts.path!r} in {masked!r}")
        return StoreUrl(scheme, host, port, 0, None, None, masked, nodes)
    if scheme == "redis" and len(nodes) > 1:
        raise ConfigError("store_url", f"redis:// names one server; a Redis Cluster is "
                                       f"redis-cluster://host:port,host:port, got {masked!r}")
    db = _db(parts.path, masked)
    if scheme == "redis-cluster" and db != 0:
        raise ConfigError("store_url", f"a Redis Cluster has database 0 only, got {db} in {masked!r}")
    return StoreUrl(scheme, host, port, db, username, password, masked, nodes)


def _nodes(hostlist: str, scheme: str, masked: str) -> tuple[tuple[str, int], ...]:
    """(host, port) of every comma-separated server of `hostlist`, each checked."""
    items = hostlist.split(",")
    if len(items) > MAX_NODES:
        raise ConfigError("store_url", f"at most {MAX_NODES} servers, got {len(items)} in {masked!r}")
    nodes = []
    for item in items:
        node = urlsplit(f"//{item}")
        if not item or not node.hostname:
            raise ConfigError("store_url", f"missing host, got {masked!r} (expected {EXAMPLE})")
        nodes.append((node.hostname, _port(node, scheme, masked)))
    if len(set(nodes)) != len(nodes):
        raise ConfigError("store_url", f"a server is named twice in {masked!r}")
    return tuple(nodes)


def _port(parts, scheme: str, masked: str) -> int:
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is None:
        return DEFAULT_PORTS[scheme]
    if not 1 <= port <= 65535:
        given = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        raise ConfigError("store_url", f"port must be an integer 1-65535, got {given!r} in {masked!r}")
    return port


def _db(path: str, masked: str) -> int:
    text = path.lstrip("/") if path.count("/") <= 1 else path
    if text == "":
        return 0
    if not text.isdigit():
        raise ConfigError(
            "store_url", f"Redis database must be a non-negative integer, got {text!r} in {masked!r}"
        )
    return int(text)


def _memory(parts, masked: str) -> StoreUrl:
    name = parts.netloc
    if not _NAME.match(name):
        raise ConfigError(
            "store_url", f"memory:// needs a name of 1-64 characters [A-Za-z0-9_.-], got {masked!r}"
        )
    if parts.path not in ("", "/"):
        raise ConfigError("store_url", f"memory URLs take no path, got {parts.path!r} in {masked!r}")
    return StoreUrl("memory", name, 0, 0, None, None, masked, ())
