"""The local runtime's one face (faasgd.local): every name it offers resolves, nothing loads before it is asked for,
a patched module is seen through it, and the rooms keep local/'s top small."""

import subprocess
import sys

import pytest

import faasgd.local as local
from faasgd.local.lifecycle import options
from support.paths import ROOT


@pytest.mark.parametrize("name", sorted(local.FACE))
def test_every_name_of_the_face_resolves(name):
    module, attribute = local.FACE[name]
    assert getattr(local, name) is (sys.modules[module] if attribute is None else getattr(sys.modules[module], attribute))


def test_a_name_not_on_the_face_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'daemon'"):
        local.daemon


def test_the_face_imports_a_room_only_when_a_name_of_it_is_asked_for():
    program = ("import sys, faasgd.local as local\n"
               "before = sorted(m for m in sys.modules if m.startswith('faasgd.local.'))\n"
               "local.control\n"
               "print(before, 'faasgd.local.lifecycle.control' in sys.modules, 'faasgd.local.lifecycle.daemon' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "True", "False"]


def test_a_patched_module_is_seen_through_the_face(monkeypatch):
    monkeypatch.setattr(options, "DEFAULT_DIR", ".elsewhere")
    assert local.DEFAULT_DIR == ".elsewhere"


def test_local_keeps_at_most_four_modules_beside_its_init():
    top = sorted(p.name for p in (ROOT / "src" / "faasgd" / "local").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= 4, top
    rooms = [p for p in (ROOT / "src" / "faasgd" / "local").iterdir() if (p / "__init__.py").is_file()]
    for room in rooms:  # each room says what it owns
        assert (room / "__init__.py").read_text().startswith('"""'), room.name
