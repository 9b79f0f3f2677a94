"""A job's evaluations as points: checks name their samples, evaluated epoch ends take epoch x training rows."""

from faasgd.tracking.timeline import points, run_start, train_rows


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
