"""Resource profiles: Driple's figures on synthetic series with known answers, the sampler on fake clocks,
the per-thread byte meter, and a job's columns from worker records."""

from __future__ import annotations

import threading

import pytest

from faasgd.profile import bursts, figures
from faasgd.profile.bursts import Bursts, merge
from faasgd.profile.sampler import Sampler
from faasgd.profile.worker_profile import MAX_POINTS, WorkerProfile, append
from faasgd.worker.progress import WorkerProgress
from faasgd.store import meter


def feed(values, threshold=0.5, dt=0.1, relative=False) -> dict:
    series = Bursts(threshold, relative)
    for value in values:
        series.add(value, dt)
    return series.stats


def test_bursts_and_idles_of_a_square_wave():
    # loading (idle head), then bursts of 3, 2, 1 samples at 2.0 separated by idles of 2 and 4, then an idle tail
    values = [0, 0, 0, 2, 2, 2, 0, 0, 2, 2, 0, 0, 0, 0, 2, 0, 0]
    out = bursts.figures(feed(values))
    assert out["burst_s"] == pytest.approx((3 + 2 + 1) / 3 * 0.1)
    assert out["idle_s"] == pytest.approx((2 + 4) / 2 * 0.1)  # head and tail are not idle periods
    assert out["burst_use"] == pytest.approx(2.0)


def test_burst_consumption_is_the_mean_during_bursts_only():
    stats = feed([0.1, 1.0, 3.0, 0.2, 2.0, 0.0], dt=0.5)
    assert bursts.figures(stats)["burst_use"] == pytest.approx((1.0 + 3.0 + 2.0) / 3)
    assert stats["integral"] == pytest.approx(sum([0.1, 1.0, 3.0, 0.2, 2.0, 0.0]) * 0.5)
    assert stats["peak"] == 3.0 and stats["bursts"] == 2 and stats["idles"] == 1


def test_a_flat_busy_series_is_one_burst_without_idle():
    out = bursts.figures(feed([1.0] * 10))
    assert out == {"burst_s": pytest.approx(1.0), "idle_s": None, "burst_use": pytest.approx(1.0)}


def test_a_series_below_its_threshold_has_no_burst():
    out = bursts.figures(feed([0.5, 0.1, 0.4]))  # at the threshold is not above it
    assert out == {"burst_s": 0.0, "idle_s": None, "burst_use": None}


def test_memory_threshold_is_relative_to_the_first_sample():
    stats = feed([500.0, 510.0, 530.0, 540.0, 505.0], threshold=16.0, relative=True)
    assert stats["bursts"] == 1 and stats["burst_time"] == pytest.approx(0.2)
    assert bursts.figures(stats)["burst_use"] == pytest.approx(535.0)


def test_stats_of_calls_add_up_to_the_stats_of_the_whole():
    first, second = [0, 2, 2, 0, 2], [0, 0, 2, 0, 0, 2, 2]
    whole = bursts.figures(merge([feed(first), feed(second)]))
    assert whole["burst_s"] == pytest.approx((2 + 1 + 1 + 2) / 4 * 0.1)
    assert whole["idle_s"] == pytest.approx((1 + 2) / 2 * 0.1)  # one idle run in each call
    assert merge([feed(first), None, {}])["peak"] == 2


def test_job_figures_merge_workers_and_report_totals_and_peaks():
    def record(cpu, rss, tx, rx):
        return {"resources": {"cpu": feed(cpu), "rss": feed(rss, 16.0, relative=True),
                              "tx": feed(tx, 65536.0), "rx": feed(rx, 65536.0)}}

    a = record([1, 1, 0, 1], [100, 120, 120, 100], [1e6, 0, 1e6, 0], [2e6, 0, 0, 2e6])
    b = record([0, 2, 0, 0], [200, 200, 250, 200], [0, 1e5, 0, 0], [0, 0, 0, 0])
    out = figures.job_figures({0: a, 1: b, 2: None}.values())
    assert set(out) == set(figures.MEASURES) and len(figures.DRIPLE) == 12
    assert "cpu_s" not in out  # the job's CPU is counted, not sampled (faasgd.job.result)
    assert out["tx_bytes"] == round((2e6 + 1e5) * 0.1) and out["rx_bytes"] == round(4e6 * 0.1)
    assert out["cpu_peak"] == 2 and out["rss_peak_mb"] == 250 and out["tx_peak_bps"] == 1e6
    assert out["cpu_burst_s"] == pytest.approx((0.2 + 0.1 + 0.1) / 3)  # a: 2 bursts (2, 1 samples); b: 1
    assert out["cpu_idle_s"] == pytest.approx(0.1)  # only a has an idle run between bursts
    assert out["rx_idle_s"] == pytest.approx(0.2)


def test_a_job_without_profiles_has_empty_columns():
    assert set(figures.job_figures([{"samples": 3}, None]).values()) == {None}


class FakeThreads:
    """Clock, thread CPU times and RSS the test sets by hand."""

    def __init__(self):
        self.now, self.cpu, self.rss = 100.0, {1: 50.0}, 300.0

    def sampler(self, threads=lambda: [1]):
        return Sampler(10.0, threads, clock=lambda: self.now, cpu_s=self.cpu.get, rss=lambda: self.rss)


def test_sampler_rates_from_fake_cpu_clock_and_memory():
    fake = FakeThreads()
    sampler = fake.sampler()
    for used in (0.09, 0.01, 0.08):  # cores 0.9, 0.1, 0.8 over 0.1 s periods
        fake.now += 0.1
        fake.cpu[1] += used
        sampler.sample()
    stats = sampler.summary()["cpu"]
    assert stats["integral"] == pytest.approx(0.18)  # CPU seconds since the sampler started, not before
    assert stats["bursts"] == 2 and stats["idles"] == 1 and stats["peak"] == pytest.approx(0.9)
    assert sampler.series()["rss"] == [300.0] * 3 and sampler.series()["t"] == pytest.approx([0.1, 0.2, 0.3])


def test_sampler_counts_a_thread_that_appears_later_from_its_start_and_keeps_it_after_it_ends():
    fake = FakeThreads()
    idents = [1]
    sampler = fake.sampler(lambda: list(idents))
    fake.now += 0.1
    fake.cpu[2] = 0.03  # a new thread (the channel's) has used 0.03 s when first seen
    idents.append(2)
    sampler.sample()
    del fake.cpu[2]  # it ended: its clock cannot be read any more
    fake.now += 0.1
    sampler.sample()
    assert sampler.summary()["cpu"]["integral"] == pytest.approx(0.03)


def test_sampler_counts_the_store_bytes_of_its_threads_only():
    fake = FakeThreads()
    ident = threading.get_ident()
    sampler = fake.sampler(lambda: [ident])
    meter.counter().sent += 1000  # this thread's traffic
    other = threading.Thread(target=lambda: setattr(meter.counter(), "sent", 5000))
    other.start()
    other.join()  # another thread's traffic is not this worker's
    fake.now += 0.5
    sampler.sample()
    assert sampler.summary()["tx"]["integral"] == pytest.approx(1000)
    assert sampler.series()["tx"] == [pytest.approx(2000.0)]  # bytes/s


def test_sampler_keeps_a_bounded_series():
    fake = FakeThreads()
    sampler = fake.sampler()
    from faasgd.profile.sampler import MAX_POINTS as CALL_POINTS
    for _ in range(CALL_POINTS * 3):
        fake.now += 0.1
        sampler.sample()
    points = sampler.series()["t"]
    assert CALL_POINTS // 2 <= len(points) < CALL_POINTS and points == sorted(points)
    assert sampler.summary()["rss"]["time"] == pytest.approx(CALL_POINTS * 3 * 0.1)  # the stats keep every sample


def test_append_bounds_a_workers_profile_record():
    call = {"start": 10.0, "t": [0.1 * i for i in range(1000)], **{n: [1.0] * 1000 for n in bursts.SERIES}}
    kept = append(None, call, 0.1)
    kept = append(kept, {**call, "start": 120.0}, 0.1)
    assert len(kept["t"]) <= MAX_POINTS and kept["t"] == sorted(kept["t"])
    assert kept["t"][-1] == pytest.approx(110 + 99.9, abs=0.2)  # seconds since the first call began


def test_worker_profile_puts_its_stats_in_their_record_and_adds_to_earlier_calls():
    import uuid

    from faasgd import job
    from faasgd.config import load_config
    from faasgd.store import open_store

    store = open_store(f"memory://resources{uuid.uuid4().hex[:8]}")
    job_id = job.create_job(store, load_config({}, {"dataset": "synthetic", "train_samples": 600,
                                                    "number_of_workers": 1}))
    progress = WorkerProgress.fresh(0, 0)
    progress.resources = {"cpu": feed([1.0, 1.0])}  # an earlier call's
    profile = WorkerProfile.start(1000.0, progress, job_id)
    sum(i * i for i in range(200_000))  # some CPU on this thread
    profile.finish(store)
    cpu = progress.resources["cpu"]
    assert cpu["bursts"] >= 1 and cpu["integral"] > 0.2  # the earlier 0.2 CPU-s plus this call's
    assert "resources" not in progress.record(0.0)  # they do not ride with every push: a record of their own
    stored = store.get_record(job_id, "resources:0")  # its figures kept to 6 significant digits
    assert stored.keys() == progress.resources.keys()
    for series, stats in progress.resources.items():
        assert stored[series] == pytest.approx(stats, rel=1e-5, abs=1e-12)


def test_profile_hz_zero_profiles_nothing():
    progress = WorkerProgress.fresh(0, 0)
    WorkerProfile.start(0.0, progress).finish()
    assert progress.resources == {}


def test_each_run_gets_a_profile_png_and_the_series_leave_its_record(tmp_path):
    import matplotlib.image

    from faasgd.batch.profile_plots import write_profile_plots

    series = {"start": 1.0, "t": [0.1, 0.2, 0.3], "cpu": [0.2, 0.9, 0.1], "rss": [150.0, 160.0, 161.0],
              "tx": [0.0, 3e5, 0.0], "rx": [1e5, 0.0, 2e5]}
    runs = [{"configuration": "a", "round": 1, "profile": [series, None, series]}, {"configuration": "b", "profile": []}]
    out = write_profile_plots(runs, tmp_path)
    assert out[0]["profile_plot"] == "profiles/run-001.png" and out[1]["profile_plot"] is None
    assert "profile" not in out[0] and "profile" in runs[0]  # the caller's records are left alone
    image = matplotlib.image.imread(tmp_path / "profiles" / "run-001.png")
    assert image.shape[0] > 400 and image.std() > 0.01  # drawn, not blank


def test_runs_csv_has_one_column_per_resource_figure(tmp_path):
    import csv

    from faasgd.batch.report import CSV_COLUMNS, write_runs_csv

    assert set(figures.MEASURES) <= set(CSV_COLUMNS)
    run = {"config": {}, "varying": {}, "cpu_s": 1.25, "tx_bytes": 4096, "rx_idle_s": None}
    write_runs_csv([run], tmp_path / "runs.csv")
    row = next(csv.DictReader(open(tmp_path / "runs.csv")))
    assert float(row["cpu_s"]) == 1.25 and int(row["tx_bytes"]) == 4096 and row["rx_idle_s"] == ""


def test_the_summary_shows_the_resource_figures():
    from faasgd.cli.progress import resource_lines

    result = {**dict.fromkeys(figures.MEASURES), "cpu_s": 3.5, "cpu_burst_s": 0.25, "tx_bytes": 123456789,
              "rss_peak_mb": 162.5}
    text = "\n".join(resource_lines(result))
    assert "0.25" in text and "123,456,789 bytes" in text and "162.5" in text
    assert "3.5" not in text  # the counted CPU-seconds have a line of their own (cli/progress.py cpu_lines)
    # an unprofiled job shows no block, though its CPU is counted
    assert resource_lines({**dict.fromkeys(figures.MEASURES), "cpu_s": 3.5}) == []


def test_the_status_query_profile_1_returns_each_workers_series(monkeypatch):
    import uuid

    from faasgd import job
    from faasgd.config import load_config
    from faasgd.errors import ConfigError
    from faasgd.functions import replica_cache
    from faasgd.functions.emnist_setup import job_status
    from faasgd.store.keys import profile_name
    from faasgd.store import open_store

    url = f"memory://profile{uuid.uuid4().hex[:8]}"
    store = open_store(url)
    replica_cache.keep_store(url, store)
    try:
        config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "number_of_workers": 2, "store_url": url})
        job_id = job.create_job(store, config)
        series = {"start": 1.0, "t": [0.1], **{name: [1.0] for name in bursts.SERIES}}
        store.put_record(job_id, profile_name(0), series)
        env = {"store_url": url}
        status = job_status({"job_id": job_id, "profile": "1"}, env)[1]
        assert status["profiles"] == [series, None]  # worker 1 has not profiled anything yet
        assert "profiles" not in job_status({"job_id": job_id}, env)[1]
        with pytest.raises(ConfigError) as error:
            job_status({"job_id": job_id, "model": "npz", "profile": "1"}, env)
        assert error.value.field == "model"
    finally:
        replica_cache.forget()
