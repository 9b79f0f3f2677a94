"""Store names are built in faasgd.store.keys only: the exact strings (existing stores' records must still be
read) and a scan of every other module of src/faasgd for a name formatted by hand."""

from __future__ import annotations

import ast
import hashlib
import inspect
import pathlib
import re

import pytest

from faasgd.store import ParameterStore, keys

SRC = pathlib.Path(keys.__file__).resolve().parents[1]  # src/faasgd
KEYS = pathlib.Path(keys.__file__).resolve()
_PREFIX = re.compile(r"[a-z][a-z0-9-]*[:-]\Z")  # a name's fixed head: `progress:`, `crossing-`, `w:`


# ---- the names, as they are in existing stores ---------------------------------------------------------------
def test_record_names_keep_their_wire_format():
    assert [keys.progress_name(3), keys.heartbeat_name(3), keys.supervising_name(3), keys.relaunch_name(3),
            keys.profile_name(3)] == ["progress:3", "heartbeat:3", "supervising:3", "relaunch:3", "profile:3"]
    assert keys.lease_name(0, "loop") == "lease:0:loop" and keys.lease_name(2, 7) == "lease:2:7"
    assert keys.cache_refresh_name(1234) == "cache-refresh:1234"
    assert [keys.CONFIG, keys.JOB, keys.DONE, keys.RESULT, keys.LOST, keys.STATE] == \
        ["config", "job", "done", "result", "lost", "state"]


def test_copy_counter_and_blob_names_keep_their_wire_format():
    assert (keys.crossing_copy(7), keys.LAST_PARAMS_COPY, keys.CONFLICTS) == ("crossing-7", "final", "conflicts")
    assert keys.residual_name(0, 3, "call-a") == "residual:0:3:" + hashlib.sha256(b"call-a").hexdigest()[:16]
    assert (keys.sync_state_name(1, 4), keys.sync_state_name(1, 5)) == ("sync-state:1:0", "sync-state:1:1")
    assert keys.round_part_name("rounds", 2, 1, 4, 3) == "rounds:r2:p1of4:w3"
    assert keys.round_merged_name("rounds", 2, 1, 4) == "rounds:r2:m1of4"
    assert (keys.trainer_model_name(2), keys.trainer_predictions_name(2)) == ("model:2", "pred:2")
    assert [keys.DATASET_OBJECT, keys.MODELS_OBJECT, keys.META_FEATURES_OBJECT, keys.FULL_MODEL_OBJECT] == \
        ["dataset", "models", "meta-features", "full-model"]


def test_a_worker_record_key_is_its_progress_record():
    assert keys.worker("j1", 2) == keys.record("j1", "progress:2") == "faasgd:j1:r:progress:2"


# ---- the scan --------------------------------------------------------------------------------------------------
def docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions (prose, not names)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def heads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, leading text) of every string literal and every f-string that starts with text, docstrings aside."""
    skip, found = docstrings(tree), []
    inner = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            found.append((node.lineno, str(node.values[0].value)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip | inner:
            found.append((node.lineno, node.value))
    return found


def name_prefixes(source: str) -> set[str]:
    """The fixed heads of the names a names module formats: the text an f-string starts with (`progress:`,
    `crossing-`), and a literal that is only a head (`r:`)."""
    return {text for _, text in heads(ast.parse(source)) if _PREFIX.match(text)}


def starts_like(text: str, prefix: str) -> bool:
    """Whether `text` begins a name with `prefix` (a name holds no space: "model: the job's" is prose)."""
    return text.startswith(prefix) and not text[len(prefix):len(prefix) + 1].isspace()


def name_parameters() -> dict[str, int]:
    """Store methods and keys functions that take a name: {callable name: the name argument's position}."""
    found = {}
    for owner, skip in ((ParameterStore, 1), (keys, 0)):
        for attr, fn in inspect.getmembers(owner, callable):
            if attr.startswith("_") or not inspect.isfunction(fn):
                continue
            params = list(inspect.signature(fn).parameters)[skip:]
            for param in ("name", "names"):
                if param in params:
                    found[attr] = params.index(param)
    return found


def formatted(node: ast.AST) -> bool:
    """Whether an argument is a name written out: a string, an f-string, or a list or tuple holding one."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return any(formatted(item) for item in node.elts)
    if isinstance(node, ast.ListComp):
        return formatted(node.elt)
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def name_arguments(tree: ast.AST, takes: dict[str, int]) -> list[int]:
    """Lines where a store method or keys function is handed a name written out instead of built by keys."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        attr = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if attr not in takes:
            continue
        at = takes[attr]
        args = node.args[at:at + 1] + [k.value for k in node.keywords if k.arg in ("name", "names")]
        if any(formatted(arg) for arg in args):
            lines.append(node.lineno)
    return lines


def violations(source: str, path: str, prefixes: set[str], takes: dict[str, int]) -> list[str]:
    """file:line of every name formatted in `source` outside the names module."""
    tree = ast.parse(source)
    found = [f"{path}:{line}: {text[:40]!r} starts like a store name" for line, text in heads(tree)
             if any(starts_like(text, prefix) for prefix in prefixes)]
    found += [f"{path}:{line}: a store name written out (build it in faasgd.store.keys)"
              for line in name_arguments(tree, takes)]
    return found


PREFIXES = name_prefixes(KEYS.read_text())
TAKES = name_parameters()


def test_the_prefixes_come_from_the_names_module():
    assert {"progress:", "heartbeat:", "lease:", "supervising:", "relaunch:", "profile:", "crossing-",
            "residual:", "sync-state:", "cache-refresh:", "model:", "pred:", "w:", "r:", "c:"} <= PREFIXES
    assert {"get_record", "put_record", "add_record", "get_records", "keep_copy", "put_blob", "counter"} <= set(TAKES)


PLANTED = '''
"""progress:3 in a docstring is prose."""
def beat(store, job_id, w):
    store.put_record(job_id, f"heartbeat:{w}", {})
    return "lease:" + str(w)
def ended(store, job_id):
    return store.get_records(job_id, ["done", keys.RESULT])
def kept(store, job_id, name):
    return store.read_copy(job_id, name=f"crossing-{name}"), store.get_record(job_id, keys.progress_name(0))
'''


def test_the_scan_finds_a_planted_name():
    found = violations(PLANTED, "planted.py", PREFIXES, TAKES)
    assert [line.split(": ")[0] for line in found] == \
        ["planted.py:4", "planted.py:5", "planted.py:9", "planted.py:4", "planted.py:7", "planted.py:9"]


def test_a_new_prefix_in_the_names_module_is_scanned_for():
    prefixes = name_prefixes(KEYS.read_text() + '\ndef fresh_name(w):\n    return f"fresh-kind:{w}"\n')
    assert violations('x = f"fresh-kind:{1}"\n', "planted.py", prefixes, TAKES) == \
        ["planted.py:1: 'fresh-kind:' starts like a store name"]


def test_no_module_but_the_names_module_formats_a_store_name():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.resolve() != KEYS:
            found += violations(path.read_text(), str(path.relative_to(SRC.parent)), PREFIXES, TAKES)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text", ["progress:1", "w:meta"])
def test_a_plain_literal_counts_too(text):
    assert violations(f"x = {text!r}\n", "planted.py", PREFIXES, TAKES)
