"""The Python API tutorial as its notebook (docs/tutorials/python-api.ipynb), run cell by cell by nbclient in a real
kernel against a real local runtime, its outputs checked. Run in a fresh folder beside a link to the repository's
stack.yml, as a notebook started from the repository root sees it (its runtime's files go to that folder's .faasgd)."""

import re

import pytest

from faasgd.local import control
from support.paths import ROOT

pytestmark = pytest.mark.e2e
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = ROOT / "docs" / "tutorials" / "python-api.ipynb"


def text_of(cell) -> str:
    """What a code cell showed: its printed lines and its value's text, in order."""
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append(output["text"])
        elif output["output_type"] in ("execute_result", "display_data"):
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


def cell(notebook, needle: str) -> str:
    """The output of the one code cell whose source holds `needle`."""
    found = [c for c in notebook.cells if c.cell_type == "code" and needle in c.source]
    assert len(found) == 1, needle
    return text_of(found[0])


def test_the_tutorial_notebook_runs_against_a_real_runtime(tmp_path):
    (tmp_path / "stack.yml").symlink_to(ROOT / "stack.yml")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    try:
        nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        if control.read_state(str(tmp_path / ".faasgd")) is not None:  # a cell failed before stop_runtime
            control.down(str(tmp_path / ".faasgd"))
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+ started here\n", cell(notebook, "api.start_runtime(port=0)"))
    assert re.fullmatch(r"j[0-9a-f]+ 2 workers on store \S+\n", cell(notebook, 'job.info["number_of_workers"]'))
    assert cell(notebook, "n_push=0").startswith("n_push -> n_push: ")
    assert cell(notebook, "job.wait(timeout_s=600").splitlines()[-1] == "done"
    job_id = cell(notebook, 'job.info["number_of_workers"]').split()[0]
    frame = cell(notebook, 'frame[["job_id"')
    assert job_id in frame and "done" in frame and "True" in frame  # reached its target
    sweep = cell(notebook, 'sweep[["number_of_workers"').splitlines()
    assert [line.split()[1] for line in sweep[1:]] == ["1", "2"]
    described, compared = cell(notebook, "model = api.load_model(job)").splitlines()
    assert described.startswith("crossing (784, 32, 10) ")  # the parameters that met the target, the job's shape
    evaluated, _, reported = compared.partition(" reported ")
    assert float(evaluated) == pytest.approx(float(reported), abs=1e-9)  # the job's own test rows, the same model
    assert (tmp_path / "model.npz").is_file()
    found_again, not_found = cell(notebook, "again = api.job(job.job_id)").splitlines()[:2]
    assert found_again == "done" and "memcached" in not_found
    assert re.fullmatch(r"\[\d+(, \d+)*\]", cell(notebook, "api.stop_runtime()").strip())  # the pids it stopped
    assert cell(notebook, "with api.runtime(port=0):").startswith("done ")
    assert control.read_state(str(tmp_path / ".faasgd")) is None
