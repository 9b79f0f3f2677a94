"""Driving synchronous-algorithm jobs in one process, threads as workers (unit and integration tests)."""

import threading

from faasgd import data, job
from faasgd.config import load_config
from faasgd.lambdaml.sync_worker import load_sync_worker
from faasgd.worker import invocation
from faasgd.worker.invocation import Call
from faasgd.store import open_store


def config_of(name, url=None, **overrides):
    values = {"dataset": "higgs-like", "model": "lr", "algorithm": "grad_avg", "train_samples": 330,
              "test_samples": 100, "validation_samples": 30, "batch_size": 16, "learning_rate": 0.5,
              "number_of_workers": 2, "max_epochs": 2, "target_accuracy": 1.0, "store_url": url or f"memory://{name}",
              "store_timeout_s": 1.0, "round_timeout_s": 20, "profile_hz": 0}
    values.update(overrides)
    return load_config({}, values)


def in_threads(target, workers):
    """Run target(worker_id) in one thread per worker; re-raise the first error."""
    errors = []

    def run(w):
        try:
            target(w)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            errors.append(error)

    threads = [threading.Thread(target=run, args=(w,), name=f"worker-{w}") for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]


def train_job(config, mode="loop"):
    """Create the job and train every worker to its stop rule (loop: one call each; per-iteration: one per epoch)."""
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)

    def worker(w):
        if mode == "loop":
            invocation.run_worker(Call(config, store, job_id, w), make=load_sync_worker)
            return
        for iteration in range(config.max_epochs):
            answer = invocation.run_iteration(Call(config, store, job_id, w, f"call-{w}-{iteration}", iteration=iteration, loader=data.load_shard), make=load_sync_worker)
            if answer["next_iteration"] is None:
                break

    in_threads(worker, config.number_of_workers)
    return store, job_id


class Killed(BaseException):
    """The process died (not an error the worker records)."""


def killing_first_space(real, at):
    """A stand-in for sync_worker.channel_space: thread `worker-1`'s first space kills it at its `at`-th put."""
    armed = [True]

    def space_for(config, store):
        space = real(config, store)
        if threading.current_thread().name == "worker-1" and armed and armed.pop():
            return KillingSpace(space, at)
        return space

    return space_for


class KillingSpace:
    """The job's store as a blob space that kills its caller at its `at`-th put of a round object."""

    def __init__(self, space, at):
        self.space, self.at, self.puts = space, at, 0

    def put_blob(self, job_id, name, data):
        self.puts += 1
        if self.puts == self.at:
            raise Killed(f"killed at put {self.at} ({name})")
        self.space.put_blob(job_id, name, data)

    def get_blob(self, job_id, name):
        return self.space.get_blob(job_id, name)

    def __getattr__(self, name):
        """A space's merged slots (put_merged, get_merged, clear_merged: the DynamoDB channel's), when it has them:
        a put_merged counts as a put as well."""
        found = getattr(self.space, name)
        if name != "put_merged":
            return found

        def put_merged(job_id, object_name, data):
            self.puts += 1
            if self.puts == self.at:
                raise Killed(f"killed at put {self.at} ({object_name})")
            return found(job_id, object_name, data)
        return put_merged




def train_with_worker_1_killed(config):
    """Create the job; worker 0 trains to its stop rule; worker 1's first call dies mid-round (the test arms
    killing_first_space), then a second call re-invokes it, resuming from its record. The store and the job."""

    store = open_store(config.store_url)
    job_id = job.create_job(store, config)

    def worker(w):
        if w == 0:
            invocation.run_worker(Call(config, store, job_id, 0), make=load_sync_worker)
            return
        call = Call(config, store, job_id, 1, "first")
        trainer = invocation.start(call, invocation.resume(call), load_sync_worker)
        try:
            invocation.train(trainer)
        except Killed:
            pass
        else:
            raise AssertionError("worker 1 was not killed")
        assert 0 < store.worker_record(job_id, 1)["rounds"]  # it had checkpointed rounds before it died
        invocation.run_worker(Call(config, store, job_id, 1, "second"), make=load_sync_worker)  # re-invoked: resumes from its record

    in_threads(worker, 2)
    return store, job_id
