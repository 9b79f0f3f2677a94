"""One options object from `faasgd up` to the daemon: built once, given to the daemon as its flags, read back whole;
and the daemon's state.json kept by one object the services report to."""

import os
from types import SimpleNamespace

import pytest

from faasgd import api
from faasgd.errors import ConfigError
from faasgd.local.lifecycle import daemon
from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.lifecycle.runtime_state import RuntimeState
from faasgd.local.lifecycle.state_file import load_state
from faasgd.local.processes import ProcessRef
from faasgd.local.queue.rules import Chaos, DeliveryPolicy
from faasgd.local.services.stack_groups import GroupSizes
from support.paths import ROOT


def test_the_daemon_reads_back_the_very_options_up_gave_it(tmp_path):
    given = UpOptions(str(ROOT / "stack.yml"), 0, str(tmp_path), ack_wait_s=12.5, upstream_timeout_s=7.0,
                      queue_workers=3, backend="docker", watchdog="off", wait=True, only="emnist-*",
                      groups=GroupSizes(2, 1, 4), stores="pool,s3",
                      delivery=DeliveryPolicy("pro", max_attempts=3, chaos=Chaos(drop=(("echo", 2),))))
    read = UpOptions.from_args(daemon.parse_args(given.to_argv()))
    assert read == UpOptions(**{**given.__dict__, "wait": False})  # waiting is `up`'s, not the daemon's
    assert read.stores == ("pool", "s3")


def test_options_are_checked_once_naming_the_flag():
    for options, flag in ((UpOptions(port=70000), "--port"), (UpOptions(ack_wait_s=0), "--ack-wait"),
                          (UpOptions(backend="podman"), "--backend"),
                          (UpOptions(groups=GroupSizes(cluster_masters=0)), "--redis-cluster-masters")):
        with pytest.raises(ConfigError, match=f"^{flag}: "):
            options.check()


def test_start_runtime_refuses_a_setting_up_has_not(tmp_path):
    (tmp_path / "stack.yml").write_text("functions: {}\n")
    with pytest.raises(ConfigError, match="^acks: is not a runtime setting"):
        api.start_runtime(str(tmp_path / "stack.yml"), directory=str(tmp_path), acks=3)


class Supervisor:
    catalog, deployments = None, {}

    def processes(self):
        return [{"name": "echo", "pid": 11}]

    def all_available(self):
        return True


def test_the_state_file_follows_what_the_services_report(tmp_path):
    table = {"gateway.openfaas:8080": "127.0.0.1:7000"}
    runtime = RuntimeState(tmp_path, {"stores": {}, "broker": {"url": "nats://127.0.0.1:4222", "pid": 1}}, table)
    runtime.write()
    assert load_state(tmp_path) == {"stores": {}, "broker": {"url": "nats://127.0.0.1:4222", "pid": 1}}
    runtime.attach(supervisor := Supervisor())
    runtime.record_s3({"minio.openfaas-fn:9000": "127.0.0.1:9100"}, {"url": "s3", "pid": 5})
    assert table["minio.openfaas-fn:9000"] == "127.0.0.1:9100"  # the table the replicas' Host reads
    supervisor.on_change()  # a replica started: written with it
    state = load_state(tmp_path)
    assert state["stores"]["s3"] == {"url": "s3", "pid": 5} and state["replicas"] == [{"name": "echo", "pid": 11}]
    runtime.zygote_restarted(SimpleNamespace(pid=os.getpid()))  # started again: `faasgd down` finds the new one
    assert load_state(tmp_path)["zygote"] == ProcessRef.of(os.getpid()).to_json()
    runtime.ready()
    assert load_state(tmp_path)["ready"] is True and load_state(tmp_path)["available"] is True
