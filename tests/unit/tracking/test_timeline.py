"""A job's evaluations as points: checks name their samples, evaluated epoch ends take epoch x training rows."""

from faasgd.tracking.timeline import job_rates, points, run_start, train_rows, worker_rates


def test_points_are_the_evaluations_in_time_order():
    events = [{"event": "created", "at": 1.0},
              {"event": "epoch", "worker_id": 1, "epoch": 2, "accuracy": 0.6, "test_accuracy": 0.5, "at": 5.0},
              {"event": "epoch", "worker_id": 0, "epoch": 2, "accuracy": None, "at": 5.1},  # another's round
              {"event": "check", "worker_id": 0, "samples": 96, "accuracy": 0.4, "at": 3.0},
              {"event": "result", "state": "done", "at": 6.0}]
    found = points(events, train_rows=100)
    # the epoch end takes the most samples a check saw by then: workers run at their own pace
    assert [(p.kind, p.samples, p.accuracy, p.worker_id) for p in found] == [("check", 96, 0.4, 0), ("epoch", 96, 0.6, 1)]
    assert found[1].test_accuracy == 0.5 and found[1].epoch == 2 and found[0].epoch is None


def test_without_checks_an_epoch_end_counts_every_shard_passed_that_many_times():
    events = [{"event": "epoch", "worker_id": 0, "epoch": 3, "round": 9, "accuracy": 0.7, "at": 2.0}]  # in step
    assert [p.samples for p in points(events, train_rows=100)] == [300]


def test_rows_and_start_come_from_the_workers_records():
    status = {"workers": [{"shard_size": 60, "intervals": [[10.0, 12.0], [13.0, 14.0]]},
                          {"shard_size": 40, "intervals": [[9.5, 11.0]]}, None]}
    assert train_rows(status) == 100 and run_start(status) == 9.5
    assert run_start({"workers": []}) is None


def test_the_jobs_rate_at_each_check_is_its_samples_since_the_run_start():
    events = [{"event": "check", "worker_id": 0, "samples": 400, "accuracy": 0.4, "at": 12.0},
              {"event": "epoch", "worker_id": 1, "epoch": 1, "accuracy": 0.5, "at": 13.0},
              {"event": "check", "worker_id": 1, "samples": 1200, "accuracy": 0.6, "at": 14.0}]
    found = points(events, train_rows=1000)
    assert [(r.at, r.samples, r.samples_per_s, r.worker_id) for r in job_rates(found, start=10.0)] == \
        [(12.0, 400, 200.0, None), (14.0, 1200, 300.0, None)]  # the epoch end is no check
    synchronous = points([{"event": "epoch", "worker_id": 0, "epoch": 2, "accuracy": 0.5, "at": 14.0}], 100)
    assert [r.samples_per_s for r in job_rates(synchronous, start=10.0)] == [50.0]
    assert job_rates(found, start=None) == []


def test_a_workers_rate_at_each_epoch_end_is_its_own_shard_passes_since_its_first_call():
    workers = [{"shard_size": 60, "intervals": [[10.0, 12.0], [13.0, 16.0]]},
               {"shard_size": 40, "intervals": [[11.0, 15.0]]}, None]
    events = [{"event": "epoch", "worker_id": 1, "epoch": 1, "accuracy": None, "at": 13.0},
              {"event": "epoch", "worker_id": 0, "epoch": 2, "accuracy": 0.5, "at": 14.0},
              {"event": "epoch", "worker_id": 2, "epoch": 1, "accuracy": 0.5, "at": 14.5},  # no record: no rate
              {"event": "check", "worker_id": 0, "samples": 90, "accuracy": 0.4, "at": 12.5}]
    assert [(r.worker_id, r.samples, r.samples_per_s) for r in worker_rates(events, workers)] == \
        [(1, 40, 20.0), (0, 120, 30.0)]
