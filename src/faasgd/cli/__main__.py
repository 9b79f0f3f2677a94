"""`python -m faasgd.cli` is the `faasgd` command."""

import sys

from faasgd.cli.main import entry

if __name__ == "__main__":
    sys.exit(entry())
