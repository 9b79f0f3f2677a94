"""faasgd.cpu_limit on fake /proc and /sys files: cgroup v1 and v2 quotas, none, missing files, nested cgroups, the
affinity below the quota; the threads a user's variables choose; a loaded BLAS set through threadpoolctl."""

from __future__ import annotations

from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from faasgd import cpu_limit
from faasgd.errors import ConfigError

V2_MOUNT = "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate"
V1_MOUNTS = [
    "32 31 0:29 {root} /sys/fs/cgroup/cpu,cpuacct ro,nosuid master:13 - cgroup cgroup rw,cpu,cpuacct",
    "34 31 0:31 {root} /sys/fs/cgroup/cpuset ro,nosuid master:15 - cgroup cgroup rw,cpuset",
]


def fake_root(tmp_path: Path, cgroup: str, mountinfo: list[str], files: dict[str, str]) -> Path:
    """A folder standing for /: proc/self/cgroup and proc/self/mountinfo as given, and each of `files`."""
    for path, text in {"proc/self/cgroup": cgroup, "proc/self/mountinfo": "\n".join(mountinfo) + "\n",
                       **files}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return tmp_path


def v2(tmp_path: Path, cpu_max: str, cgroup_path: str = "/") -> Path:
    folder = "sys/fs/cgroup" + cgroup_path.rstrip("/")
    return fake_root(tmp_path, f"0::{cgroup_path}\n", [V2_MOUNT], {f"{folder}/cpu.max": cpu_max})


def v1(tmp_path: Path, quota: str, period: str = "100000", cgroup_path: str = "/docker/abc",
       mount_root: str = "/docker/abc") -> Path:
    """A container's view under the host's cgroup namespace: /proc/self/cgroup names /docker/abc, and that cgroup
    is what is mounted (its mount root /docker/abc)."""
    lines = f"5:cpuset:{cgroup_path}\n4:cpu,cpuacct:{cgroup_path}\n1:name=systemd:{cgroup_path}\n"
    mounts = [line.format(root=mount_root) for line in V1_MOUNTS]
    folder = "sys/fs/cgroup/cpu,cpuacct"
    return fake_root(tmp_path, lines, mounts, {f"{folder}/cpu.cfs_quota_us": f"{quota}\n",
                                               f"{folder}/cpu.cfs_period_us": f"{period}\n"})


def test_cgroup_v2_quota_of_one_and_a_half_cpus_gives_one_thread_on_four(tmp_path):
    limit = cpu_limit.read_limit(v2(tmp_path, "150000 100000\n"), affinity=4, cpu_count=4)
    assert limit.quota == 1.5 and limit.usable == 1


def test_cgroup_v2_max_is_no_quota_and_the_affinity_decides(tmp_path):
    limit = cpu_limit.read_limit(v2(tmp_path, "max 100000\n"), affinity=3, cpu_count=4)
    assert limit.quota is None and limit.usable == 3


def test_cgroup_v1_quota_as_docker_run_cpus_1_sets_it_in_the_containers_mounted_cgroup(tmp_path):
    limit = cpu_limit.read_limit(v1(tmp_path, "100000"), affinity=2, cpu_count=2)
    assert limit.quota == 1.0 and limit.usable == 1


def test_cgroup_v1_quota_minus_one_is_none(tmp_path):
    limit = cpu_limit.read_limit(v1(tmp_path, "-1"), affinity=2, cpu_count=2)
    assert limit.quota is None and limit.usable == 2


def test_cgroup_v1_mounted_at_the_hierarchys_root_reads_the_processs_own_folder(tmp_path):
    root = v1(tmp_path, "-1", cgroup_path="/docker/abc", mount_root="/")
    nested = root / "sys/fs/cgroup/cpu,cpuacct/docker/abc"
    nested.mkdir(parents=True)
    (nested / "cpu.cfs_quota_us").write_text("250000\n")
    (nested / "cpu.cfs_period_us").write_text("100000\n")
    limit = cpu_limit.read_limit(root, affinity=4, cpu_count=4)
    assert limit.quota == 2.5 and limit.usable == 2


def test_the_smallest_quota_on_the_way_up_wins(tmp_path):
    root = v2(tmp_path, "100000 100000\n", cgroup_path="/")  # the mount's top: 1 CPU
    child = root / "sys/fs/cgroup/kubepods/pod1"
    child.mkdir(parents=True)
    (child / "cpu.max").write_text("300000 100000\n")
    (root / "proc/self/cgroup").write_text("0::/kubepods/pod1\n")
    assert cpu_limit.read_limit(root, affinity=4, cpu_count=4).quota == 1.0


def test_v1_holds_the_cpu_controller_on_a_hybrid_machine(tmp_path):
    root = v1(tmp_path, "200000", cgroup_path="/", mount_root="/")
    (root / "proc/self/cgroup").write_text("4:cpu,cpuacct:/\n0::/user.slice\n")
    (root / "proc/self/mountinfo").write_text("\n".join([*(m.format(root="/") for m in V1_MOUNTS), V2_MOUNT]))
    assert cpu_limit.read_limit(root, affinity=4, cpu_count=4).quota == 2.0


@pytest.mark.parametrize("missing", ["proc/self/cgroup", "proc/self/mountinfo",
                                     "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"])
def test_missing_files_count_as_no_quota(tmp_path, missing):
    root = v1(tmp_path, "100000")
    (root / missing).unlink()
    limit = cpu_limit.read_limit(root, affinity=2, cpu_count=2)
    assert limit.quota is None and limit.usable == 2


def test_no_proc_at_all_is_no_quota(tmp_path):
    assert cpu_limit.read_limit(tmp_path, affinity=1, cpu_count=8).usable == 1


def test_a_cgroup_outside_its_mounts_root_is_no_quota(tmp_path):
    root = v1(tmp_path, "100000", cgroup_path="/other", mount_root="/docker/abc")
    assert cpu_limit.read_limit(root, affinity=2, cpu_count=2).quota is None


def test_the_affinity_below_the_quota_caps_it(tmp_path):
    limit = cpu_limit.read_limit(v2(tmp_path, "400000 100000\n"), affinity=2, cpu_count=8)
    assert limit.quota == 4.0 and limit.usable == 2


def test_a_quota_below_one_cpu_still_runs_one_thread(tmp_path):
    assert cpu_limit.read_limit(v2(tmp_path, "50000 100000\n"), affinity=2, cpu_count=2).usable == 1


@pytest.mark.parametrize("text, expected", [("150000 100000", 1.5), ("max 100000", None), ("max", None),
                                            ("", None), ("garbage 100000", None), ("0 100000", None)])
def test_cpu_max_forms(text, expected):
    assert cpu_limit.parse_cpu_max(text) == expected


def test_mountinfo_escapes_are_undone():
    mounts = [r"30 25 0:26 / /sys/fs/my\040cgroup rw - cgroup2 cgroup2 rw"]
    assert cpu_limit.cgroup_mount(mounts, 2) == ("/", "/sys/fs/my cgroup")


LIMIT = cpu_limit.CpuLimit(quota=1.0, affinity=2, cpu_count=2)


def test_without_a_users_variable_every_variable_is_the_usable_count():
    threads = cpu_limit.chosen_threads({}, LIMIT)
    assert (threads.count, threads.source) == (1, "the CPU limit")
    assert cpu_limit.thread_env({}, threads.count) == {name: "1" for name in cpu_limit.VARIABLES}


@pytest.mark.parametrize("environ, count, source", [
    ({"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "4"}, 2, "OPENBLAS_NUM_THREADS"),
    ({"OMP_NUM_THREADS": "3,1"}, 3, "OMP_NUM_THREADS"),
    ({"MKL_NUM_THREADS": "2"}, 2, "MKL_NUM_THREADS"),
    ({"OPENBLAS_NUM_THREADS": " ", "OMP_NUM_THREADS": "2"}, 2, "OMP_NUM_THREADS"),
])
def test_a_users_variable_wins_over_the_limit(environ, count, source):
    threads = cpu_limit.chosen_threads(environ, LIMIT)
    assert (threads.count, threads.source) == (count, source)


def test_the_variables_a_user_left_unset_take_the_users_count():
    environ = {"OMP_NUM_THREADS": "3"}
    assert cpu_limit.thread_env(environ, 3) == {"OPENBLAS_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_variable_that_is_no_thread_count_is_an_error_naming_it(value):
    with pytest.raises(ConfigError, match=r"^OPENBLAS_NUM_THREADS: .*got"):
        cpu_limit.chosen_threads({"OPENBLAS_NUM_THREADS": value}, LIMIT)


def test_limit_threads_writes_the_environment_and_sets_a_loaded_blas():
    import numpy  # noqa: F401  loaded: the pools are set, not only the variables

    environ = {"OMP_NUM_THREADS": "2"}
    with threadpool_limits(limits=None):  # the test process's pools restored at the end
        threads = cpu_limit.limit_threads(environ, LIMIT)
        pools = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert threads.count == 2 and environ == {name: "2" for name in cpu_limit.VARIABLES}
    assert pools and set(pools) == {2}


def test_the_report_names_the_threads_the_libraries_run_and_why():
    threads = cpu_limit.chosen_threads({}, LIMIT)
    line = cpu_limit.report(threads, [("openblas", 1), ("openblas", 1)])
    assert line == "BLAS threads: 1 (the CPU limit: quota 1 CPU, affinity 2 of 2 CPUs; openblas 1, openblas 1)"
    assert cpu_limit.report(cpu_limit.chosen_threads({"OPENBLAS_NUM_THREADS": "2"}, LIMIT), []).startswith(
        "BLAS threads: none loaded yet, 2 when one is (OPENBLAS_NUM_THREADS=2")
