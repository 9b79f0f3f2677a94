"""Where the repository is, for tests at any depth: the folder above tests/ that holds pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").is_file())


def copy_project(folder: Path, names: tuple[str, ...]) -> Path:
    """The repository's files and folders `names` copied into `folder` (no caches): what faas-cli reads of it."""
    for name in names:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(source, folder / name)
    return folder
