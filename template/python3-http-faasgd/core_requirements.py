"""Print the faasgd core's own dependencies, one a line, from the pyproject.toml given (its [project] table).

The Dockerfile installs them from pyproject.toml alone, before the function's code arrives: that file is the same in
every function's build context, so the layer is built once and reused by every function image and every rebuild
that changes only code. Prints nothing (the full install later fetches them) when tomllib is missing (Python < 3.11)
or the file is not there.
"""

import sys

try:
    import tomllib
except ImportError:
    sys.exit(0)

try:
    with open(sys.argv[1], "rb") as f:
        project = tomllib.load(f).get("project", {})
except OSError:
    sys.exit(0)
print("\n".join(project.get("dependencies", [])))
