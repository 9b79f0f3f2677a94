"""Build contexts as faas-cli lays them out, for running a function's replicas locally.

`build/<fn>/` holds every file of `template/<lang>/`, then `function/` with the handler folder
copied over the template's function/ (faas-cli does the same before `docker build`). The faasgd
core is not copied: locally it is the installed package.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from faasgd.errors import ConfigError
from faasgd.local.replicas.stack import FunctionSpec

SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".tox", "build", "template")


def build_function(spec: FunctionSpec, template_root: Path, build_root: Path) -> Path:
    """Lay out build_root/<fn>/ from the template and the handler; returns that folder."""
    template = template_root / spec.lang
    if not (template / "template.yml").is_file():
        raise ConfigError(f"functions.{spec.name}.lang", f"no template {spec.lang!r} in {template_root}")
    if not (spec.handler / "handler.py").is_file():
        raise ConfigError(f"functions.{spec.name}.handler", f"no handler.py in {spec.handler}")
    target = build_root / spec.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(template, target, ignore=SKIP)
    shutil.copytree(spec.handler, target / "function", ignore=SKIP, dirs_exist_ok=True)
    (target / "function" / "__init__.py").touch()
    return target


def template_fprocess(build_dir: Path) -> str:
    """template.yml's fprocess, which `faas-cli deploy -f` sends as the deployment's envProcess."""
    try:
        template = yaml.safe_load((build_dir / "template.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return ""
    return str(template.get("fprocess") or "") if isinstance(template, dict) else ""
