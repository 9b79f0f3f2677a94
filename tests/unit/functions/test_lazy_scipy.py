"""An image-set worker never imports scipy (20-28 MiB and 0.2 s a worker); the tabular sets still read CSR."""

import subprocess
import sys
import textwrap

import numpy as np
import scipy.sparse as sp

from faasgd.lambdaml.convex.linear import as_inputs, issparse


def test_mlp_job_trains_where_scipy_cannot_be_imported():
    code = textwrap.dedent("""
        import sys
        sys.modules["scipy"] = None  # any import of scipy raises ImportError
        import faasgd.functions.emnist_setup, faasgd.functions.emnist_train  # the functions' modules
        from faasgd import job
        from faasgd.config import load_config
        from faasgd.functions.workloads import run_worker
        from faasgd.store import open_store
        from faasgd.worker.invocation import Call
        config = load_config({}, {"dataset": "synthetic", "train_samples": 300, "test_samples": 50,
                                  "max_epochs": 1, "number_of_workers": 1, "store_url": "memory://lazy",
                                  "profile_hz": 0})
        store = open_store(config.store_url)
        job_id = job.create_job(store, config)
        assert run_worker(Call(config, store, job_id, 0))["state"] == "finished"
        assert store.get_record(job_id, "result")["state"] == "done"
        print("trained")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "trained"


def test_issparse_tells_csr_from_dense_once_scipy_is_loaded():
    X = sp.random(5, 7, density=0.3, format="coo", dtype=np.float32, random_state=0)
    assert issparse(X) and not issparse(X.toarray()) and not issparse([[1.0]])
    assert as_inputs(X).format == "csr"  # any sparse input becomes CSR, never dense
