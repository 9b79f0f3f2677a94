"""`faasgd train`: a job end to end through the local OpenFaaS runtime, or straight against a store.

Through the runtime (default): `faasgd up` if it is not running, POST the flags to emnist-setup,
watch the job through the gateway, print the summary, and `faasgd down` if this command started
the runtime. `--direct`: worker processes on this machine against the store (cli/direct.py).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Callable

from faasgd import api, job
from faasgd.job import model_file, result
from faasgd.cli import flags, forkserver
from faasgd.cli.connect import gateway
from faasgd.cli.output import emit_json, progress_console
from faasgd.cli.progress import LiveProgress, print_batch_note, print_summary
from faasgd.cli.status import job_handle
from faasgd.config import FIELDS, LOCATION_KEYS, RENAMED, load_config, load_request, read_setting
from faasgd.errors import ConfigError, JobNotFound
from faasgd.functions.settings import FunctionEnv
from faasgd.local import bytes_between, check_options, control, load_stack, optional_stores, runtime_link_bytes
from faasgd.openfaas import SETUP_FUNCTION
from faasgd.store import open_store, parse_store_url

# --direct's machinery (the workers' processes, the job's creation, the workloads) and --dry-run's admission are
# imported by the paths that run them: a job through the gateway needs none of them (~0.05 s of imports)


TRAINING_FUNCTIONS = "emnist-*"  # the functions a training job calls (`faasgd up --filter`)
# How often the job's status is read through the gateway, for the live progress. Each read waits up to this long
# for the job's end (emnist-setup's `wait`, which looks for it every 20 ms), so the command sees the end ~0.1 s
# after it (that look, a status read, the gateway), not at the next read.
# A read costs ~19 ms of CPU (gateway, watchdog, emnist-setup, the store), which the workers share the cores with:
# two a second (it was four, polling at 0.25 s for the end's sake).
STATUS_POLL_S = 0.5
CANCEL_WAIT_S = 60.0  # after Ctrl-C: how long the command waits for the job it cancelled to end


def config_overrides(args) -> dict:
    """The config keys given as flags (strings; the config parser checks them, renamed keys included)."""
    given = {name: getattr(args, name) for name in FIELDS if getattr(args, name) is not None}
    renamed = {old: getattr(args, f"renamed_{old}") for old in RENAMED if getattr(args, f"renamed_{old}", None)}
    return {**renamed, **given}


TRACKER_LIBRARIES = (("mlperf_logging", "--mllog"), ("tensorboard", "--tensorboard"), ("mlflow", "--mlflow"))


def trackers(args) -> list:
    """The trackers the flags ask for (faasgd.tracking, imported only then), checked before anything starts."""
    if args.metrics_lines and args.json:
        raise ConfigError("--metrics-lines", "prints on stdout, where --json keeps the result alone: give one of them")
    mlflow = (args.mlflow or os.environ.get("MLFLOW_TRACKING_URI")) if args.mlflow is not None else None
    if args.mlflow is not None and not mlflow:
        raise ConfigError("--mlflow", "needs a tracking URI: give one, or set MLFLOW_TRACKING_URI")
    if not (args.mllog or args.metrics_lines or args.tensorboard or mlflow):
        return []
    from faasgd import tracking

    try:
        return tracking.sinks(mllog=args.mllog, tensorboard=args.tensorboard, metrics_lines=args.metrics_lines,
                              mlflow=mlflow)
    except ImportError as error:  # the extra missing
        flag = next((flag for library, flag in TRACKER_LIBRARIES if str(error.name).startswith(library)), "--mlflow")
        raise ConfigError(flag, f"needs the extra track (pip install 'faasgd[track]'): {error}") from None


def feeding(trackers: list, read_events, read_model, live):
    """The status callback: the live progress, then the trackers' feed (None: no tracker)."""
    if not trackers:
        return live, None
    from faasgd.tracking import Feed

    feed = Feed(trackers, read_events, read_model)

    def seen(status: dict) -> None:
        live(status)
        feed(status)

    return seen, feed


def run(args) -> int:
    return run_with(args, config_overrides(args))


def resume(args) -> int:
    """`faasgd resume JOB [flags]`: a new job from JOB's last parameters (in the same store), with JOB's
    configuration and the flags given over it; its samples and time to the target count on from JOB's
    (faasgd.job.records.resume_point). With --model-file FILE (JOB's model file, `faasgd model JOB -o FILE`) and a
    store that lost JOB: the file's parameters are put back first (faasgd.job.records.restore_job) and its
    configuration is the base; while the store still holds JOB, the store's are used and the file is not needed."""
    found = model_file.from_npz(args.model_file) if args.model_file else None  # checked before anything is sent
    if found is not None and found.job_id != args.job_id:
        raise ConfigError("--model-file", f"the file is job {found.job_id!r}'s model, not {args.job_id!r}'s")
    handle = job_handle(args)  # where `faasgd status JOB` reads it, with the same flags
    try:
        old = handle.status()
    except JobNotFound:
        if found is None:
            raise
        old = {"config": restore(args, found)}
    else:
        if found is not None:
            print(f"job {args.job_id} is still in the store: resuming from its parameters there (the model file is "
                  f"not used)", file=sys.stderr)
    if not old.get("config"):
        raise ConfigError("job_id", f"job {args.job_id!r} has no configuration left to resume from")
    base = {key: value for key, value in old["config"].items()
            if key in FIELDS and key not in LOCATION_KEYS and key != "resume_from"}
    if args.direct:  # the store is the one --store-url names
        base.pop("store", None)
    return run_with(args, {**base, **config_overrides(args), "resume_from": args.job_id})


def restore(args, found: model_file.ModelFile) -> dict:
    """Put the model file's parameters back where JOB is looked for (the store with --direct, else through
    emnist-setup's restore form); the file's configuration, or its network alone when it holds none."""
    trained = found.trained or {"samples": 0, "epochs": 0.0, "wall_s": 0.0}
    config = found.config or {"dataset": found.dataset, "activation": found.activation,
                              **({"model": "cnn", "cnn_arch": found.cnn_arch} if found.cnn_arch else
                                 {"hidden_sizes": list(found.sizes[1:-1])})}
    if args.direct:
        store = open_store(args.store_url or read_setting(os.environ, "store_url"))
        keep_s = config.get("keep_s") or load_config({}).keep_s
        record = job.restore_job(store, found.job_id, found.params, list(found.sizes), trained, keep_s)
    else:
        record = gateway(args).restore_job({"job_id": found.job_id, **({"store": args.store} if args.store else {})},
                                           model_file.to_npz(found))["restored"]
    print(f"job {found.job_id}: its parameters " + ("were put back from its model file before: resuming from them"
                                                   if record.get("again") else "put back from its model file")
          + f" ({found.source}, version {found.version}, {trained['samples']:,} samples trained)", file=sys.stderr)
    return config


def run_with(args, overrides: dict) -> int:
    flags.seconds("--timeout", args.timeout)
    args.trackers = trackers(args)
    if args.port is not None:
        check_options(args.port)
    if args.detach and args.direct:
        raise ConfigError("--detach", "not with --direct: this command runs the job's workers itself")
    if args.detach and args.trackers:
        raise ConfigError("--detach", "not with --mllog, --tensorboard, --mlflow or --metrics-lines: they follow the "
                                      "job to its end (from Python: faasgd.tracking.follow)")
    if args.direct:  # this process is the configuration: store locations come from its flags and environment
        if overrides.get("store"):
            raise ConfigError("store", "names a function's configured store; with --direct give --store-url")
        env = {**os.environ, **{key: overrides.pop(key) for key in LOCATION_KEYS if key in overrides}}
        return run_direct(args, load_config(env, overrides))
    config = load_request({}, overrides)  # as the function will read it: bad flags fail before anything starts
    if args.dry_run:
        admit(config, args.file)
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    if args.gateway or os.environ.get("OPENFAAS_URL"):  # a gateway the user named (a cluster): start nothing
        return run_through_gateway(args, overrides)
    # a runtime this command starts runs the job's functions only (emnist-setup, emnist-train), not the stacking ones,
    # and the optional store the job names (a Redis Cluster, a memcached pool, S3: faasgd.local.services.optional_stores); a
    # running one without it is refused before anything is sent, with the command that gives it one
    wanted = optional_stores.needed(config.store, config.channel)
    running = control.read_state(args.dir)
    if running is not None:
        optional_stores.refuse_missing(running, wanted, "store" if config.store in wanted else "channel",
                                       None if args.dir == control.DEFAULT_DIR else args.dir)
    found = api.start_runtime(flags.stack_file(args.file), 0 if args.port is None else args.port, args.dir,
                              only=TRAINING_FUNCTIONS, stores=wanted)
    args.gateway = found.gateway_url  # the runtime this command found or started, and no other
    try:
        return run_through_gateway(args, overrides)
    finally:
        if found.started and not args.keep_up and not args.detach:  # a detached job goes on in the runtime
            api.stop_runtime(args.dir)


def admit(config, stack_path: str) -> None:
    """What emnist-setup admits (functions/admission.py: rows, slots, memory_limit, store_budget), against the stack
    file's environment of emnist-setup; without the stack file only what needs no environment is checked."""
    from faasgd.functions import admission

    env = load_stack(stack_path)[SETUP_FUNCTION].environment if os.path.isfile(stack_path) else {}
    scheme = parse_store_url(FunctionEnv.read(env).store_url_of(config.store)).scheme
    admission.check_job(config, env, scheme)


def run_through_gateway(args, body: dict) -> int:
    client = gateway(args)
    links = local_links(args, client.url)
    job = api.submit(client, body, getattr(args, "dir", None))
    info = job.info
    out = progress_console()
    out.print(f"job {job.job_id}: {info['number_of_workers']} worker(s), {info['dataset']}, mode {info['invocation_mode']}, "
              f"store {info['store']} ({info['store_url']}), gateway {client.url}", highlight=False, markup=False)
    if args.detach:
        out.print(f"job {job.job_id}: running; follow it with `faasgd status {job.job_id} --watch`, stop it with "
                  f"`faasgd cancel {job.job_id}`", highlight=False, markup=False)
        if args.json:
            emit_json({"job_id": job.job_id, "state": "running", **info})
        return 0
    live = LiveProgress(out)
    on_status, feed = feeding(getattr(args, "trackers", []), job.events, job.model_bytes, live)
    try:
        status = job.wait(args.timeout, on_status=on_status, poll_s=STATUS_POLL_S)
    except KeyboardInterrupt:
        live.close()
        status = cancelled_on_interrupt(job.job_id, job.cancel, lambda: job.wait(CANCEL_WAIT_S, poll_s=STATUS_POLL_S))
    finally:
        live.close()
    if links is not None and status.get("result"):
        status["result"]["link_bytes"] = bytes_between(links, local_links(args, client.url))
    return report(status, job.job_id, args, feed)


def local_links(args, url: str) -> dict | None:
    """When `url` is the gateway of the local runtime in --dir and it runs emulated nodes: each node link's bytes
    so far (faasgd.local.nodes.network), counted by the kernel; else None."""
    state = control.read_state(args.dir) if getattr(args, "dir", None) else None
    if not state or state.get("gateway_url", "").rstrip("/") != url.rstrip("/"):
        return None
    return runtime_link_bytes(state)


def cancelled_on_interrupt(job_id: str, cancel: Callable[[], object], wait: Callable[[], dict]) -> dict:
    """Ctrl-C while `faasgd train` watches its job: the job is cancelled (said before anything else), then its end
    awaited (up to CANCEL_WAIT_S; a second Ctrl-C stops waiting, the job cancelled all the same). The status, marked
    `interrupted`."""
    print(f"faasgd: Ctrl-C: cancelling job {job_id}; its workers stop at their next check (Ctrl-C again: stop "
          f"waiting)", file=sys.stderr, flush=True)
    cancel()
    status = wait()
    status["interrupted"] = True
    return status


def run_direct(args, config) -> int:
    from faasgd.cli import direct
    from faasgd.functions import orchestrate

    if args.dry_run:
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    forkserver.start()  # running since main() unless called otherwise: then its imports run beside the job's creation
    store = open_store(config.store_url)
    job_id = orchestrate.create_job(store, config)
    out = progress_console()
    out.print(f"job {job_id}: {config.number_of_workers} worker(s), {config.dataset}, mode {config.invocation_mode}, "
              f"store {store.url}, target {config.target_accuracy}", highlight=False, markup=False)
    live = LiveProgress(out)
    on_status, feed = feeding(getattr(args, "trackers", []), lambda start: store.events(job_id, start),
                              lambda: model_file.to_npz(model_file.read_model(store, job_id)), live)

    def interrupted(wait: Callable[[float], dict]) -> dict:
        live.close()
        return cancelled_on_interrupt(job_id, lambda: job.cancel_job(store, job_id, by="cli"),
                                      lambda: wait(CANCEL_WAIT_S))

    try:
        status = direct.run_job(config, store, job_id, args.timeout, on_status=on_status, on_interrupt=interrupted)
    finally:
        live.close()
    return report(status, job_id, args, feed)


def report(status: dict, job_id: str, args, feed=None) -> int:
    """Print the summary (on stderr with --json, then the result as the one JSON document on stdout; cli/output.py),
    hand the job's end to its trackers (`feed`, faasgd.tracking); 0 when the job is done."""
    final = status.get("result") or result.missing(job_id, f"no result after --timeout {args.timeout:g} s")
    print_summary(final, status.get("workers"))
    print_batch_note(status.get("config"))
    if args.json:
        emit_json(final)
    if feed is not None:  # after the result is out: a tracker's failure (TrackerFailed, exit 1) loses none of it
        feed.finish(status, final)
    if status.get("interrupted"):
        return 130  # interrupted, as any command cut short by Ctrl-C (faasgd.cli.main)
    return 0 if final.get("state") == "done" else 1
