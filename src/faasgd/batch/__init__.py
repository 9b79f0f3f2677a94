"""Batch benchmark runs (test.sh): a matrix of configurations x rounds, then tables and plots."""
