"""bench/turkle_compare.py's /proc helpers: CPU of gunicorn and of one database's backends.
(The bench itself needs Turkle and minutes of load; it is not run here.)"""

import os
from pathlib import Path

from bench.turkle_compare import cpu_delta, descendants, names_database, stat_fields


def test_stat_fields_count_from_the_last_parenthesis():
    # A command name with spaces and parentheses, as gunicorn's and postgres's titles have.
    fields = ["S", "1200"] + ["0"] * 9 + ["150", "50", "7", "9"]
    stat = "1234 (gunicorn: worker) [x]) " + " ".join(fields)
    assert stat_fields(stat) == (1200, 200)  # parent; utime + stime (children not counted)


def test_stat_fields_of_this_process():
    parent, ticks = stat_fields(Path("/proc/self/stat").read_text())
    assert parent == os.getppid()
    assert ticks >= 0


def test_names_database_takes_only_that_database_backends():
    title = b"postgres: 15/main: postgres turkle_cmp_run_ab 127.0.0.1(5432) idle"
    assert names_database(title, "turkle_cmp_run_ab")
    assert not names_database(title, "turkle_cmp_run_a")  # a prefix is another database
    assert not names_database(b"psql\0turkle_cmp_run_ab\0", "turkle_cmp_run_ab")
    assert not names_database(b"postgres: 15/main: checkpointer ", "turkle_cmp_run_ab")


def test_descendants_follow_the_tree_below_the_master():
    parents = {10: 1, 11: 10, 12: 10, 13: 11, 20: 1, 21: 20}
    assert descendants(parents, 10) == {10, 11, 12, 13}


def test_cpu_delta_counts_newcomers_whole():
    assert cpu_delta({1: 100, 2: 50}, {1: 130, 2: 50, 3: 7}) == 37
