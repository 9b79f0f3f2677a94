"""Wing 3: the `faasgd` command (extra `cli`): the local runtime's verbs, jobs (train, status), --direct runs."""
