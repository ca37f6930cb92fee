"""Rows read and commits per judgment, from pg_stat, on a database built by judging_load.

One annotator (bench00) saves N judgments through the real judging view (the page's
fetch submit: store, claim the next, render), in process, on an otherwise idle database.
The deltas of pg_stat_user_tables / pg_stat_user_indexes / pg_stat_database around the
loop, divided by N, are the rows each judgment reads, per table, and its commits. Then
EXPLAIN (ANALYZE, BUFFERS) of the progress query shows which statement grows with the
project.

    psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE sasc_x'
    .venv/bin/python -c "import sys; sys.path.insert(0, 'bench'); import judging_load as j; \
        j.setup('postgres://postgres@127.0.0.1:5432/sasc_x', 20000)"
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sasc_x .venv/bin/python \
        bench/judging_cost.py [--judgments 50]
"""

import argparse
import os
import re
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from annotate import judgments, selectors  # noqa: E402
from annotate.models import AnnotationProject  # noqa: E402

STATS = """
SELECT relname, coalesce(seq_tup_read, 0), coalesce(idx_tup_fetch, 0), coalesce(idx_scan, 0)
  FROM pg_stat_user_tables
"""


def stats(url: str) -> tuple[dict, int]:
    with psycopg.connect(url, autocommit=True) as c:
        tables = {r[0]: r[1:] for r in c.execute(STATS)}
        (commits,) = c.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return tables, commits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judgments", type=int, default=50)
    n = parser.parse_args().judgments
    url = os.environ["DATABASE_URL"]
    project = AnnotationProject.objects.get(slug="bench")
    user = get_user_model().objects.get(username="bench00")
    client = Client()
    client.force_login(user)
    client.post(f"/annotate/{project.slug}/judge/")  # claims the current and the next task
    held = [a.task_id for a in judgments.task_held(user=user, project=project)]
    print("tasks:", project.tasks.count(), "held:", held)
    connection.close()  # a backend's statistics are flushed when it ends
    time.sleep(1.5)
    before, commits_before = stats(url)
    for _ in range(n):
        task_id, rest = held[0], held[1:]
        response = client.post(
            f"/annotate/{project.slug}/judge/{task_id}/",
            {
                "relevance": "0",
                "persona_sensitive": "no",
                "personal_sensitive": "no",
                "active_seconds": "3",
                "held": rest,
                "idempotency_key": uuid.uuid4().hex,
            },
            headers={"X-Requested-With": "fetch"},
        )
        assert response.status_code == 200, response.content[:300]
        held = rest + [int(t) for t in re.findall(rb'data-task-id="(\d+)"', response.content)]
        if len(held) < 2:
            held = [a.task_id for a in judgments.task_held(user=user, project=project)]
    connection.close()
    time.sleep(1.5)
    after, commits_after = stats(url)
    print(f"per judgment over {n}: commits {(commits_after - commits_before) / n:.1f}")
    total = 0.0
    for rel, (seq, fetch, scans) in sorted(after.items()):
        s0, f0, i0 = before.get(rel, (0, 0, 0))
        rows = (seq - s0 + fetch - f0) / n
        total += rows
        if rows >= 1 or scans - i0:
            print(f"  {rel:32s} rows {rows:10.1f}  index scans {(scans - i0) / n:6.1f}")
    print(f"  {'all tables':32s} rows {total:10.1f}")
    ids = ", ".join(str(t) for t in held[:1]) or "NULL"
    sql = selectors._PROGRESS_SQL.format(tasks=ids)
    with psycopg.connect(url, autocommit=True) as c:
        plan = c.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + sql, {"project": project.pk, "user": user.pk}
        ).fetchall()
    print("progress query:")
    for (line,) in plan:
        print("  ", line)


if __name__ == "__main__":
    main()
