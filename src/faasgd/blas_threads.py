"""One BLAS/OpenMP thread: the environment of every process that trains one worker (a replica, a direct worker).

A worker steps on one core, and numpy started with more threads has OpenBLAS spin them up at import (~0.08 s of CPU
per process) only to be limited to one (threadpoolctl) before the first step.
"""

THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
