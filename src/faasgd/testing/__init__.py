"""Test tooling shipped with faasgd, as pymemcache ships its MockMemcacheClient (pymemcache.test.utils) and
numpy its numpy.testing: what the test suite and the benchmarks both drive, importable from an installed
faasgd without putting tests/ on sys.path.

- `s3_server`: moto's S3-compatible server on loopback (`moto_atomic`: its PUTs made atomic, as S3's are),
  an IAM user's keys, buckets, and a stack file whose functions use it.
- `stacks`: a project's stack.yml copied for a test's runtime, handlers as absolute paths.
- `fault_matrix` and `faults`: a fresh `faasgd up`, four jobs at once, one fault injected from outside,
  each job's end read back (tests/e2e/test_faults.py asserts on it; bench/faults.py tabulates it).
- `shaped_net` and `shaped_stores`: store servers in network namespaces behind bandwidth-limited links, and
  their own byte counters (bench/store_scaling.py; root only).

No module of faasgd imports this package (an import-linter contract in pyproject.toml). Its dependencies
(moto, boto3, psutil, PyYAML) come with the `dev` extra, not with the core. One module is also a program the
local runtime runs: `faasgd up` starts `python -m faasgd.testing.moto_atomic` as the S3 server of a function
asking for S3 (faasgd.local.services.s3; moto for it comes with the extra `local`).
"""
