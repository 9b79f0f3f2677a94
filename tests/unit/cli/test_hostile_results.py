"""`faasgd results` meets a hostile database: names that are rich markup or terminal escape sequences are shown
as text, spelt visibly, and every input error (not a database, a damaged JSON column, another program's
tables, a folder for --plot that is not there) is one line, exit 2, no traceback."""

import sqlite3

import pytest

from faasgd.api import results_store
from faasgd.cli.main import main
from faasgd.cli.terminal_text import visible

TITLE = "\x1b]0;pwned\x07"  # sets the terminal's title
CLEAR = "\x1b[2J"  # clears the screen
NAMES = {"markup": "out[/]x", "style": "[bold red]loud[/bold red]", "title": f"t{TITLE}", "clear": f"c{CLEAR}",
         "bidi": "abc\u202eevil", "math": "a$b$c\\frac{"}


def run_row(index: int, label: str) -> dict:
    return {"config_id": index, "configuration": label, "round": 0, "job_id": f"j{index}", "state": "done",
            "store": "redis", "config": {"number_of_workers": 2}, "varying": {"label": label}}


@pytest.fixture
def db(tmp_path):
    """A results database whose batch names, folders and configuration labels are hostile, two batches."""
    path = tmp_path / "r.sqlite"
    conn = results_store.open_db(path)
    for name in ("first", "second"):
        batch = results_store.start_batch(conn, {"name": NAMES["markup"] + name, "folder": NAMES["style"],
                                                 "target": NAMES["title"]})
        for index, label in enumerate(NAMES.values(), start=1):
            results_store.record_run(conn, batch, index, {**run_row(index, label), "samples_per_s": 10.0 * index},
                                     ["samples_per_s"])
    conn.close()
    return path


def shown(capsys, *argv) -> str:
    assert main(["results", *argv]) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err and "\u202e" not in out + err  # nothing raw
    return out


def refused(capsys, argv, *words) -> None:
    assert main(["results", *argv]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("faasgd: error: ") and err.count("\n") == 1 and "Traceback" not in err, err[-2000:]
    assert all(word in err for word in words), err


def test_stored_markup_and_escapes_are_shown_as_text(db, capsys):
    listed = shown(capsys, "--db", str(db), "list")
    assert "out[/]xfirst" in listed and "[bold red]loud[/bold red]" in listed and "t\\x1b]0;pwned\\x07" in listed
    runs = shown(capsys, "--db", str(db), "runs")
    assert all(visible(label) in runs for label in NAMES.values())
    assert "c\\x1b[2J" in runs and "abc\\u202eevil" in runs
    compared = shown(capsys, "--db", str(db), "compare", "1", "2", "--measure", "samples_per_s")
    assert "out[/]x" in compared and "a$b$c\\frac{" in compared


def test_a_comparison_plot_draws_hostile_labels_literally(db, capsys, tmp_path):
    shown(capsys, "--db", str(db), "compare", "1", "2", "--measure", "samples_per_s", "--plot", str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_a_missing_plot_folder_is_one_line(db, capsys, tmp_path):
    refused(capsys, ["--db", str(db), "compare", "1", "2", "--plot", str(tmp_path / "no" / "p.png")], "--plot: ")


def test_a_non_utf8_name_is_shown_spelt(db, capsys):
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE batches SET name = CAST(X'6f7574ff1b' AS TEXT) WHERE batch_id = 1")
    assert "out\\xff\\x1b" in shown(capsys, "--db", str(db), "list")


@pytest.mark.parametrize("column, value", [("config", "{not json"), ("measures", "[1, 2]"), ("varying", None)])
def test_a_damaged_json_column_is_one_line_naming_it(db, capsys, column, value):
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA ignore_check_constraints = 1")
        conn.execute(f"UPDATE runs SET {column} = ? WHERE batch_id = 2 AND run_index = 3",
                     (value if value is not None else "null",))
    refused(capsys, ["--db", str(db), "runs"], "--db: ", f"batch 2 run 3: column {column}")
    refused(capsys, ["--db", str(db), "compare", "1", "2"], f"column {column}")


def test_a_text_file_or_an_empty_file_is_not_a_database(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("id,name\n1,a\n")
    (tmp_path / "empty.sqlite").write_bytes(b"")
    refused(capsys, ["--db", str(tmp_path / "notes.txt"), "list"], "--db: ", "not a SQLite file")
    refused(capsys, ["--db", str(tmp_path / "empty.sqlite"), "runs"], "--db: ", "empty")


@pytest.mark.parametrize("migrated", [False, True])
def test_another_programs_runs_table_is_refused_and_left_unchanged(tmp_path, capsys, migrated):
    path = tmp_path / "foreign.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT)")
        conn.execute("INSERT INTO runs VALUES (1, 'yesterday')")
        if migrated:
            conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT, "
                         "applied_at TEXT)")
    conn.close()
    before = path.read_bytes()
    words = ("table runs", "lacks batch_id") if migrated else ("no schema_migrations",)
    refused(capsys, ["--db", str(path), "list"], "--db: ", *words)
    refused(capsys, ["--db", str(path), "runs"], "--db: ", *words)
    assert path.read_bytes() == before  # never migrated by a reader
