"""faasgd.testing.fault_matrix.strike_now: the fault comes while every job still runs, even when a loop job runs
its epochs long before a per-iteration job (a call an epoch) reaches the epoch the matrix waits for."""

from faasgd.testing.fault_matrix import strike_now


def job(state, *epochs):
    return {"state": state, "workers": [{"epoch": e} for e in epochs]}


def test_the_fault_waits_for_every_job_at_its_epoch():
    assert not strike_now([job("running", 2, 1), job("running", 0, 1)], at_epoch=2, epochs=[8, 8])
    assert strike_now([job("running", 2, 1), job("running", 2, 0)], at_epoch=2, epochs=[8, 8])


def test_a_job_past_half_its_epochs_brings_the_fault_forward():
    assert strike_now([job("running", 12, 11), job("running", 0, 1)], at_epoch=2, epochs=[24, 8])
    assert not strike_now([job("running", 11, 11), job("running", 0, 1)], at_epoch=2, epochs=[24, 8])
    # an ended job no longer counts as near its end (it is past striking); short jobs keep waiting for all
    assert not strike_now([job("done", 24, 24), job("running", 0, 1)], at_epoch=2, epochs=[24, 8])
    assert not strike_now([job("running", 2, 2), job("running", 0, 1)], at_epoch=2, epochs=[4, 4])
