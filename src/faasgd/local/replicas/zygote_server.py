"""The runtime's zygote process (its reasons and its protocol: faasgd.local.replicas.zygote): it listens, imports PRELOAD,
then forks one function process per request from netns.py `enter`, and reaps them.

    python -m faasgd.local.replicas.zygote_server SOCKET
"""

from __future__ import annotations

import importlib
import json
import os
import select
import selectors
import signal
import socket
import sys
import traceback

from faasgd.local.replicas.netns import enter as enter_netns  # the standard library's only

MAX_MESSAGE = 1 << 20  # a request's JSON: argv, folder, environment
MAX_FDS = 16
PRELOAD = ("flask", "waitress", "waitress.channel", "waitress.parser", "waitress.task", "werkzeug.exceptions",
           "numpy", "threadpoolctl", "faasgd.cpu_limit", "faasgd.functions.http_call",
           "faasgd.functions.replica_renewal", "faasgd.functions.replica_life", "faasgd.functions.emnist_setup", "faasgd.functions.emnist_train",
           "faasgd.store.redis_store", "faasgd.store.memcached_store")
PR_SET_PDEATHSIG, PR_SET_NAME = 1, 15
AT_ONCE = "--at-once"  # imports at the runtime's priority, not SCHED_IDLE: a zygote started again, replicas asking now


def serve(path: str, idle: bool = True) -> None:
    address = path if len(path) < 100 else os.path.basename(path)  # sun_path holds 108 bytes; the cwd is its folder
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if os.path.exists(address):
        os.unlink(address)
    old_mask = os.umask(0o177)  # created 0600: only the runtime's owner may have a process forked
    try:
        listener.bind(address)
    finally:
        os.umask(old_mask)
    listener.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: leave(listener))  # until the loop takes over: nothing forked yet
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the runtime's to act on (its stop)
    sys.modules.setdefault("httpx._main", None)  # as index.py: httpx's command-line client is never run
    try:
        import_at_idle() if idle else import_preloaded()
    except Exception:  # noqa: BLE001 - whatever it is, the replicas start without the zygote; its log says why
        traceback.print_exc()  # a priority it could not take back too: its functions must not inherit it
        leave(listener)
    if (count := threads()) != 1:  # a fork copies no other thread, nor releases a lock one holds: refuse to fork
        print(f"faasgd zygote: {count} threads after the imports; replicas start as fresh processes", flush=True)
        leave(listener)
    Zygote(listener).run()


def import_at_idle() -> None:
    """Import PRELOAD under SCHED_IDLE (the daemon, the gateway and the stores start beside it on a small machine:
    `faasgd up` serves as soon as without it) until the daemon, about to start the replicas, gives it the runtime's
    policy back (zygote.hurry: SCHED_IDLE on a busy machine would hold the replicas back for as long as it stays
    busy); at the end it takes that policy back itself (root may: replicas under the watchdog need root), so its
    functions fork at the runtime's."""
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    import_preloaded()
    os.sched_setscheduler(0, policy, param)


def import_preloaded() -> None:
    for name in PRELOAD:
        importlib.import_module(name)


def threads() -> int:
    """This process's threads, native ones included (/proc/self/status)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


class Zygote:
    """The accept-fork-reap loop: one connection per function process, closed when it ends."""

    def __init__(self, listener: socket.socket):
        self.listener = listener
        self.selector = selectors.DefaultSelector()
        self.children: dict[int, socket.socket] = {}  # pid -> its requester's connection
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler: the wakeup fd gets the signal
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "reap")

    def run(self) -> None:
        while True:
            for key, _ in self.selector.select():
                try:
                    if key.data == "accept":
                        self.accept()
                    elif key.data == "reap":
                        os.read(self.wake_r, 4096)
                        self.reap()
                    else:  # a requester's connection: readable only once closed (it sends nothing after its request)
                        self.abandoned(key.fileobj, key.data)
                except Exception:  # noqa: BLE001 - one request's trouble must not end every function with the zygote
                    traceback.print_exc()

    def accept(self) -> None:
        connection, _ = self.listener.accept()
        fds: list[int] = []
        try:
            connection.settimeout(5.0)  # the request comes right after the connection
            message, fds, flags, _ = socket.recv_fds(connection, MAX_MESSAGE, MAX_FDS)
            connection.settimeout(None)
            request = json.loads(message)
            if flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC) or len(fds) != len(request["fds"]):
                raise ValueError("a request cut short, or its descriptors not the ones it lists")
            if gone(connection):  # it gave up waiting (and executed the function itself): fork nothing
                raise ValueError("the requester is gone")
            parent = os.getpid()
            pid = os.fork()
        except (OSError, ValueError, KeyError, TypeError):
            for fd in fds:
                os.close(fd)
            connection.close()  # `enter` executes the function itself
            return
        if pid == 0:
            os.close(connection.detach())  # the requester keeps its end; the function has no use for it
            self.become(request, fds, parent)  # never returns
        for fd in fds:
            os.close(fd)
        self.children[pid] = connection
        self.selector.register(connection, selectors.EVENT_READ, pid)
        try:
            connection.send(json.dumps({"pid": pid}).encode())
        except OSError:
            pass  # gone already: abandoned() kills the child

    def abandoned(self, connection: socket.socket, pid: int) -> None:
        """The requester (netns.py `enter`) is gone: so is its watchdog, and the function goes with them. (Its
        connection may have been closed already in this round of events, when the function's end came first.)"""
        try:
            self.selector.unregister(connection)
        except (KeyError, ValueError):
            return
        if self.children.get(pid) is connection:
            kill(pid)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self.children.pop(pid, None)
            if connection is None:
                continue
            try:
                connection.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
            except OSError:
                pass
            try:
                self.selector.unregister(connection)
            except (KeyError, ValueError):
                pass
            connection.close()

    def stop(self) -> None:
        """SIGTERM: every function process killed and reaped, then exit (the runtime's stop leaves none)."""
        for pid in list(self.children):
            kill(pid)
        for pid in list(self.children):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        leave(self.listener)

    def become(self, request: dict, fds: list[int], parent: int) -> None:
        """In the forked child: the function process `python index.py` would have been. It ends as that one
        would: SystemExit leaves through the zygote's frames (nothing there catches it) to the interpreter's own
        end, which waits for non-daemon threads and runs the atexit handlers; an uncaught error is printed and
        ends it with 1."""
        try:
            signal.set_wakeup_fd(-1)
            for number in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(number, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self.selector.close()
            self.listener.close()
            for connection in self.children.values():  # other functions' requesters: the zygote's, not this one's
                connection.close()
            self.children.clear()
            os.close(self.wake_r)
            os.close(self.wake_w)
            die_with_parent(parent)
            if request.get("netns"):  # the requester's network namespace: the host's, or its emulated node's
                enter_netns(request["netns"])
            place_fds(fds, request["fds"])
            name_process(request["env"].get("HOSTNAME", ""))
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = list(request["argv"])
            sys.orig_argv = [sys.executable, *request["argv"]]  # what a renewal execs (replica_renewal.exec_fresh)
            run_main(os.path.join(request["cwd"], request["argv"][0]))
        except SystemExit:
            raise
        except KeyboardInterrupt:
            traceback.print_exc()
            raise SystemExit(128 + signal.SIGINT)
        except BaseException:  # noqa: BLE001 - as the interpreter reports an uncaught error
            traceback.print_exc()
            raise SystemExit(1)
        raise SystemExit(0)


def run_main(script: str) -> None:
    """Run `script` as `python script` runs it: a fresh `__main__` whose __file__ is its absolute path (as Python
    3.9+ gives it), its folder first on sys.path, sys.argv as it was given."""
    import builtins
    import importlib.machinery
    import types

    main = types.ModuleType("__main__")
    main.__file__, main.__builtins__ = script, builtins
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    sys.modules["__main__"] = main
    sys.path[0] = os.path.dirname(script)
    with open(script, "rb") as source:
        code = compile(source.read(), script, "exec")
    exec(code, main.__dict__)


def place_fds(received: list[int], targets: list[int]) -> None:
    """Put each received descriptor at its number in the requester (0, 1, 2, the listening socket's 3), inheritable
    as there (moved clear of every target first, so none overwrites another still to be placed)."""
    import fcntl

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 256) for fd in received]
    for fd in received:
        os.close(fd)
    for fd, target in zip(high, targets):
        os.dup2(fd, target, inheritable=True)
    for fd in high:
        os.close(fd)


def die_with_parent(parent: int) -> None:
    """SIGKILL when the zygote (`parent`, its pid taken before the fork) goes; at once if it went already."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def gone(connection: socket.socket) -> bool:
    """Whether the other end of `connection` has closed it (its request read, nothing else to come)."""
    check = select.poll()
    check.register(connection, select.POLLRDHUP)
    return any(events & (select.POLLRDHUP | select.POLLHUP) for _, events in check.poll(0))


def name_process(name: str) -> None:
    """The replica's name as the process's (ps, psutil's name(): at most 15 bytes), where `python` stood."""
    if name:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def leave(listener: socket.socket) -> None:
    """Exit, the socket's file removed."""
    try:
        os.unlink(listener.getsockname())
    except OSError:
        pass
    os._exit(0)


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    serve(sys.argv[1], idle=AT_ONCE not in sys.argv[2:])
