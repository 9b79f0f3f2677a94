"""A new results database appears whole: migrated before it is linked in, with nothing left beside it."""

import sqlite3

from faasgd.api import results_store


def test_a_new_database_is_migrated_before_it_appears_and_leaves_nothing_beside_it(tmp_path, monkeypatch):
    path = tmp_path / "results" / "faasgd.sqlite"
    seen = []
    real_link = results_store.os.link

    def link(source, target):  # what a reader would find at the moment the file appears
        with sqlite3.connect(source) as db:
            seen.append({row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")})
        real_link(source, target)

    monkeypatch.setattr(results_store.os, "link", link)
    results_store.open_db(path).close()
    assert seen and {"schema_migrations", "batches", "runs"} <= seen[0]
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.endswith(("-wal", "-shm"))) == ["faasgd.sqlite"]
    results_store.check_results_file(path)
    assert results_store.open_db(path, create=False).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
