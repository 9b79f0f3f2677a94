"""Run a command in a network namespace of its own, as a pod runs, served on one loopback port of the host.

    python -S netns.py serve PORT COMMAND...     the replica (as root; standard library only: run by path)
    python -S netns.py enter NETNS COMMAND...    its function process, as the watchdog's fprocess

Why: of-watchdog 0.11.3 serves Prometheus metrics on port 8081, fixed (no setting reads another), on all
interfaces, and panics when that port is taken ("metrics error ListenAndServe: ... address already in use";
tried with two watchdogs on one host: the second exits at once). In a cluster each pod has its own network
namespace, so its 8081 is its own. Here each replica's watchdog gets one too. `serve`:

1. binds 127.0.0.1:PORT in the host's namespace (the address the gateway and the health checks call), or takes
   that socket bound already from the runtime (HOST_FD_ENV);
2. unshares its network namespace and brings the new one's loopback up;
3. forks a forwarder that accepts on the host socket and copies each connection to 127.0.0.1:PORT inside the
   namespace (where the watchdog listens), both ways; it dies with its parent (PR_SET_PDEATHSIG);
4. execs COMMAND (bootstrap.py, which binds upstream_url's socket in the namespace and becomes the watchdog).

`enter` is how the watchdog starts the function (faasgd.local.replicas.watchdog.replica_env): back in the host's
namespace NETNS, so the stores and the gateway stay reachable on the host's loopback (its listening socket,
bound by bootstrap.py in the replica's namespace, stays there, where the watchdog calls it), and killed when
the watchdog dies (PR_SET_PDEATHSIG), as a container's processes go with its PID 1; then it execs COMMAND, or,
when FAASGD_ZYGOTE names the runtime's zygote (faasgd.local.replicas.zygote), has the zygote fork `python index.py` with
everything exec would have given it and stays in its place: signals passed on, the function's exit status its own.
"""

import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import threading

CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
CHUNK = 65536
ACCEPT_POLL_S = 1.0  # how often the forwarder looks whether its parent is still the one it had
ZYGOTE_ENV = "FAASGD_ZYGOTE"  # faasgd.local.replicas.zygote.ENV (this file runs on the standard library alone)
PID_FILE_ENV = "FAASGD_FUNCTION_PID_FILE"  # faasgd.local.replicas.zygote.PID_FILE_ENV
WATCHDOG_PID_ENV = "FAASGD_WATCHDOG_PID"  # set by `serve` for `enter`: the watchdog's pid, its function's parent
ZYGOTE_TIMEOUT_S = 30.0  # for the zygote's answer (its imports, on a loaded machine), then exec instead
HOST_FD_ENV = "FAASGD_HOST_FD"  # `serve`: the descriptor of step 1's socket, bound by the runtime
LISTEN_FD = 3  # bootstrap.py's listening socket (LISTEN_FDS)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def die_with_parent(expected: int | None = None) -> None:
    """SIGKILL when the parent goes; at once if it has gone already (then this process has been re-parented).
    With `expected` (the pid the parent must have), also at once when the parent is another: a parent that died
    before this process first asked would otherwise pass for its parent the process it was re-parented to."""
    parent = os.getppid() if expected is None else expected
    libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def enter(netns: str) -> None:
    """Join the network namespace at path `netns` (e.g. /proc/<pid>/ns/net)."""
    fd = os.open(netns, os.O_RDONLY)
    try:
        if libc().setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({netns}): {os.strerror(err)}")
    finally:
        os.close(fd)


def enter_new_namespace() -> None:
    """A network namespace of this process's own, its loopback up (a new namespace's starts down)."""
    if libc().unshare(CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWNET): {os.strerror(err)} (a namespace per replica needs root)")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(probe, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def copy(source: socket.socket, target: socket.socket) -> None:
    """Bytes from `source` to `target` until `source` ends; then `target` is told no more comes."""
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((target, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass


def relay(client: socket.socket, port: int) -> None:
    """One connection: to the namespace's 127.0.0.1:PORT, both directions copied; refused while nothing listens."""
    try:
        inner = socket.create_connection(("127.0.0.1", port))
    except OSError:
        client.close()
        return
    back = threading.Thread(target=copy, args=(inner, client), daemon=True)
    back.start()
    copy(client, inner)
    back.join()
    inner.close()
    client.close()


def forward(listener: socket.socket, port: int, parent: int) -> None:
    """The forwarder's life: accept on the host socket until the parent (the watchdog) is gone."""
    die_with_parent()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a drain goes on through the watchdog: calls still arrive
    listener.settimeout(ACCEPT_POLL_S)
    while os.getppid() == parent:
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        client.settimeout(None)
        threading.Thread(target=relay, args=(client, port), daemon=True).start()
    os._exit(0)


def serve(port: int, command: list[str]) -> None:
    """Steps 1-4 above. Step 1's socket is inherited, bound already, when HOST_FD_ENV names its descriptor (the
    runtime binds it: pods.start_replica), else bound here."""
    inherited = os.environ.pop(HOST_FD_ENV, "")
    if inherited.isdigit():
        listener = socket.socket(fileno=int(inherited))
    else:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
    listener.listen(1024)
    enter_new_namespace()
    parent = os.getpid()
    if os.fork() == 0:
        forward(listener, port, parent)
    listener.close()
    os.environ[WATCHDOG_PID_ENV] = str(parent)  # this pid stays the watchdog's through the execs to come
    os.execvp(command[0], command)


def start_function(command: list[str], netns: str = "") -> None:
    """Become the function: through the runtime's zygote when FAASGD_ZYGOTE names its socket (faasgd.local.replicas.zygote:
    this process stays, standing in for the function forked there, which enters `netns` as this process did), else
    (or when the zygote cannot take it) exec."""
    path, pid_file = os.environ.pop(ZYGOTE_ENV, ""), os.environ.pop(PID_FILE_ENV, "")
    if path and command[:1] == [sys.executable] and len(command) > 1:
        status = through_zygote(path, command[1:], pid_file, netns)
        if status is not None:
            end_as(status)
    os.execvp(command[0], command)


def through_zygote(path: str, argv: list[str], pid_file: str, netns: str = "") -> int | None:
    """Have the zygote fork `python ARGV...` with this process's folder, environment, stdio and listening socket;
    write its pid to `pid_file` (the runtime finds the replica's function process there: it is no descendant of
    the watchdog); pass it the signals this process gets; its exit status. None (nothing started) when the zygote
    cannot."""
    targets = [0, 1, 2] + [LISTEN_FD + i for i in range(int(os.environ.get("LISTEN_FDS") or 0))]
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "fds": targets,
                          "netns": netns}).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(ZYGOTE_TIMEOUT_S)  # it listens at once and imports after: the answer waits for its imports
        sock.connect(path if len(path) < 100 else os.path.relpath(path))  # sun_path holds 108 bytes
        socket.send_fds(sock, [request], targets)
        pid = json.loads(sock.recv(4096) or b"{}").get("pid")
    except (OSError, ValueError):
        pid = None
    if not isinstance(pid, int):
        sock.close()  # a child it forks after this is killed at once (its requester is gone)
        return None
    if pid_file:  # "PID STARTTIME": the start (in clock ticks since boot, /proc's) tells a reused pid from it
        with open(pid_file + ".new", "w") as f:
            f.write(f"{pid} {start_ticks(pid)}")
        os.replace(pid_file + ".new", pid_file)
    for fd in targets[3:]:
        os.close(fd)  # the function's now
    for number in FORWARDED:
        signal.signal(number, lambda signum, _frame: os.kill(pid, signum))
    sock.settimeout(None)
    while True:
        message = sock.recv(4096)
        if not message:  # the zygote went, and the function with it (its parent-death signal)
            return -signal.SIGKILL
        status = json.loads(message).get("status")
        if isinstance(status, int):
            return status


def start_ticks(pid: int) -> str:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat's 22nd field; "" once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def end_as(status: int) -> None:
    """Exit as the function did: its code, or killed by its signal."""
    if status < 0:
        if -status not in (signal.SIGKILL, signal.SIGSTOP):  # the two that take no handler
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        status = 128 - status  # the shell's code for it, should the signal not end this process
    os._exit(status & 0xFF)


def main(argv: list[str]) -> None:
    verb, where, command = argv[0], argv[1], argv[2:]
    if verb == "serve":
        serve(int(where), command)
    elif verb == "enter":
        enter(where)
        watchdog = os.environ.pop(WATCHDOG_PID_ENV, "")
        die_with_parent(int(watchdog) if watchdog.isdigit() else None)
        start_function(command, where)
    else:
        sys.exit(f"netns.py: serve PORT COMMAND... | enter NETNS COMMAND..., not {verb!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
