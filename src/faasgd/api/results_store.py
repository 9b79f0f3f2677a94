"""Every run of every test.sh batch in one SQLite database, so studies accumulate across batches.

test.sh (batch/) writes a batch's row before its first run and each run's row as the run finishes;
`faasgd results` (cli/results.py, through api/runs.py) lists, filters and compares. Both tools use this module
(they may not import each other), so it sits in their shared layer, faasgd.api; it needs only the standard
library's sqlite3 (and faasgd.errors).

    db = open_db(path)                       # created with its folder; the schema migrated to SCHEMA_VERSION
    batch_id = start_batch(db, meta)         # meta: name, target, started_at, folder, matrix, ...
    record_run(db, batch_id, index, run)     # one run record of batch/runs.py (config, varying, measures)
    finish_batch(db, batch_id, meta)
    batches(db); runs(db, batch_ids, where)

Safe to share: WAL journal (readers never block the writer nor see half a run), a busy timeout so two
batches writing at once wait for each other instead of failing, every write one short transaction
(BEGIN IMMEDIATE). The schema is versioned: `schema_migrations` lists the migrations applied; opening a
database applies the missing ones in order, each in its own transaction, so an older file is upgraded
in place and two processes opening a new file at once apply each migration once.
Default path: results/faasgd.sqlite (where test.sh's batch folders go), or $FAASGD_RESULTS_DB.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from faasgd.errors import ConfigError

DEFAULT_PATH = "results/faasgd.sqlite"
ENV = "FAASGD_RESULTS_DB"
BUSY_TIMEOUT_MS = 60_000  # a writer waits this long for another batch's write before failing
RUN_FIELDS = ("config_id", "configuration", "round", "job_id", "state", "error", "store")  # columns of `runs`

# (version, what it does, SQL); never edit a released one: add the next.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "batches and their runs", """
        CREATE TABLE batches (
            batch_id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL, target TEXT, folder TEXT, started_at TEXT, finished_at TEXT,
            meta TEXT NOT NULL DEFAULT '{}'              -- JSON: the batch's meta.json
        );
        CREATE TABLE runs (
            batch_id INTEGER NOT NULL REFERENCES batches(batch_id),
            run_index INTEGER NOT NULL,                   -- 1.. in the batch's order (rounds outer)
            config_id INTEGER, configuration TEXT, round INTEGER, job_id TEXT, state TEXT, error TEXT, store TEXT,
            config TEXT NOT NULL DEFAULT '{}',            -- JSON: the job's config (store URLs masked)
            varying TEXT NOT NULL DEFAULT '{}',           -- JSON: the matrix keys this configuration sets
            measures TEXT NOT NULL DEFAULT '{}',          -- JSON: result.MEASURES and anything else measured
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (batch_id, run_index)
        );
        CREATE INDEX runs_by_state ON runs(state);
    """),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]
COLUMNS = {  # what the readers select, per table
    "batches": {"batch_id", "name", "target", "folder", "started_at", "finished_at", "meta"},
    "runs": {"batch_id", "run_index", *RUN_FIELDS, "config", "varying", "measures", "recorded_at"},
}
SQLITE_HEADER = b"SQLite format 3\x00"


def default_path(env: Mapping[str, str] = os.environ) -> str:
    return env.get(ENV) or DEFAULT_PATH


def now() -> str:
    return datetime.datetime.now().isoformat(timespec="seconds")


def open_db(path: str | os.PathLike, create: bool = True) -> sqlite3.Connection:
    """The database at `path` (made, with its folder, when `create`), in WAL mode, its schema up to date.
    Without `create` the file must be a results database already (check_results_file): ConfigError('db')."""
    path = Path(path)
    if not create and not path.is_file():
        raise FileNotFoundError(f"no results database at {path}")
    if not create:
        check_results_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if create and not path.exists():
        create_whole(path)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)  # transactions explicit
    db.row_factory = sqlite3.Row
    db.text_factory = lambda raw: raw.decode("utf-8", "backslashreplace")  # a non-UTF-8 name is shown, not fatal
    if not create:
        check_tables(db, path)
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    use_wal(db)
    db.execute("PRAGMA foreign_keys = ON")
    migrate(db)
    return db


def create_whole(path: Path) -> None:
    """Make the database beside `path`, migrated, then link it in: a reader never sees the empty or unmigrated file
    SQLite leaves between creating a file and its first commit. Two writers at once: the first link wins, and
    the other opens that one."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.{random.randrange(1 << 30)}.new")
    try:
        db = sqlite3.connect(partial, isolation_level=None)
        try:
            use_wal(db)
            migrate(db)
        finally:
            db.close()
        try:
            os.link(partial, path)
        except FileExistsError:
            pass
    finally:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            leftover.unlink(missing_ok=True)


def check_results_file(path: Path) -> None:
    """A SQLite file (its 16-byte header), not text or an empty file; ConfigError('db') naming it otherwise."""
    with open(path, "rb") as f:
        header = f.read(len(SQLITE_HEADER))
    if header != SQLITE_HEADER:
        raise ConfigError("db", f"{path} is not a results database ({'empty' if not header else 'not a SQLite file'}; "
                                "test.sh writes one)")


def check_tables(db: sqlite3.Connection, path: Path) -> None:
    """A database test.sh wrote: its migrations table, and `batches` and `runs` with their columns (another
    program's `runs` table is not read, and the file is not migrated); ConfigError('db') naming what differs."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "schema_migrations" not in tables:
        raise ConfigError("db", f"{path} is not a results database (no schema_migrations table; test.sh writes one)")
    for table, columns in COLUMNS.items():
        found = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if found and not columns <= found:
            raise ConfigError("db", f"{path}: table {table} is not a results database's (it lacks "
                                    f"{', '.join(sorted(columns - found))})")


def use_wal(db: sqlite3.Connection) -> None:
    """Switch the file to WAL (it stays so). Another process opening a new file at the same moment can make
    the switch fail at once with "database is locked" (SQLite does not wait on its busy handler there), so
    it is retried, with jittered sleeps, within the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if db.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() == "wal":
                return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise sqlite3.OperationalError("could not switch the results database to WAL")
        time.sleep(0.005 + random.random() * 0.02)


def applied(db: sqlite3.Connection) -> list[int]:
    """Versions of the migrations applied to `db`."""
    _write(db, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
               " applied_at TEXT NOT NULL)", ())
    return [row[0] for row in db.execute("SELECT version FROM schema_migrations ORDER BY version")]


def migrate(db: sqlite3.Connection) -> int:
    """Apply the missing migrations in order, each once even with another process migrating; the version now."""
    for version, description, sql in MIGRATIONS:
        if version in applied(db):
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)).fetchone() is None:
                for statement in (s.strip() for s in sql.split(";")):
                    if statement:
                        db.execute(statement)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, description, now()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return max(applied(db), default=0)


def _write(db: sqlite3.Connection, sql: str, values: tuple) -> sqlite3.Cursor:
    db.execute("BEGIN IMMEDIATE")
    try:
        cursor = db.execute(sql, values)
        db.execute("COMMIT")
        return cursor
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def start_batch(db: sqlite3.Connection, meta: Mapping[str, Any]) -> int:
    """A new batch's row (before its runs); its id."""
    cursor = _write(db, "INSERT INTO batches (name, target, folder, started_at, meta) VALUES (?, ?, ?, ?, ?)",
                    (meta.get("name") or "batch", meta.get("target"), meta.get("folder"),
                     meta.get("started_at") or now(), _json(meta)))
    return int(cursor.lastrowid)


def finish_batch(db: sqlite3.Connection, batch_id: int, meta: Mapping[str, Any]) -> None:
    _write(db, "UPDATE batches SET finished_at = ?, meta = ? WHERE batch_id = ?",
           (meta.get("finished_at") or now(), _json(meta), batch_id))


def record_run(db: sqlite3.Connection, batch_id: int, index: int, run: Mapping[str, Any],
               measures: Iterable[str]) -> None:
    """One finished run (a batch/runs.py record): its identity, config and the values of `measures`."""
    values = {key: run.get(key) for key in measures}
    _write(db, "INSERT OR REPLACE INTO runs (batch_id, run_index, config_id, configuration, round, job_id, state, "
               "error, store, config, varying, measures, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
           (batch_id, index, *(run.get(key) for key in RUN_FIELDS), _json(run.get("config") or {}),
            _json(run.get("varying") or {}), _json(values), now()))


def batches(db: sqlite3.Connection) -> list[dict]:
    """Every batch with its run counts, oldest first."""
    rows = db.execute("""SELECT b.batch_id, b.name, b.target, b.folder, b.started_at, b.finished_at,
                                COUNT(r.run_index) AS runs, SUM(r.state = 'done') AS done
                         FROM batches b LEFT JOIN runs r ON r.batch_id = b.batch_id
                         GROUP BY b.batch_id ORDER BY b.batch_id""")
    return [dict(row) for row in rows]


def runs(db: sqlite3.Connection, batch_ids: Iterable[int] | None = None,
         where: Mapping[str, str] | None = None) -> list[dict]:
    """The runs of `batch_ids` (all batches: None), flat: identity, config keys, varying keys, measures; only
    those whose value of each key of `where` prints as the given text (e.g. {"number_of_workers": "4"})."""
    sql, values = "SELECT * FROM runs", ()
    ids = None if batch_ids is None else [int(b) for b in batch_ids]
    if ids is not None:
        sql += f" WHERE batch_id IN ({', '.join('?' * len(ids))})" if ids else " WHERE 0"
        values = tuple(ids)
    out = []
    for row in db.execute(sql + " ORDER BY batch_id, run_index", values):
        run = {**stored_json(row, "config"), **stored_json(row, "measures"),
               **{key: row[key] for key in ("batch_id", "run_index", *RUN_FIELDS, "recorded_at")}}
        run["varying"] = stored_json(row, "varying")
        if all(text(run.get(key)) == str(value) for key, value in (where or {}).items()):
            out.append(run)
    return out


def stored_json(row: sqlite3.Row, column: str) -> dict:
    """A run's JSON column as the object it holds; ConfigError('db') naming the run and column when damaged."""
    try:
        value = json.loads(row[column])
    except (TypeError, ValueError) as error:
        value = error
    if not isinstance(value, dict):
        raise ConfigError("db", f"batch {row['batch_id']} run {row['run_index']}: column {column} does not hold a "
                                f"JSON object (the database is damaged): {str(value)[:80]!r}")
    return value


def text(value: Any) -> str:
    """A value as a filter compares it: lists joined with commas, numbers without a needless .0."""
    if isinstance(value, (list, tuple)):
        return ",".join(text(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)
