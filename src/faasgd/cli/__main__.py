"""`python -m faasgd.cli` is the `faasgd` command."""

import sys

from faasgd.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
