"""Where the repository is, for tests at any depth: the folder above tests/ that holds pyproject.toml."""

from __future__ import annotations

from pathlib import Path

ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").is_file())
