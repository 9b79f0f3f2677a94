"""The `faasgd` subcommands, one module per concern; cli.py builds the parser and maps errors to exit codes."""
