"""T11's reading: two exports of one committed PostgreSQL snapshot, from two connections."""

import threading

from django.db import connection

from annotate import exports, labels


def two_exports_of_one_snapshot(project) -> tuple[dict, dict, int, int]:
    """Export inside a snapshot, export again from another connection that joins the same
    snapshot, and count the judgments and judged (topic, document) pairs in it with SQL: the qrels
    has a line per pair."""
    second: dict = {}
    with labels.snapshot() as snapshot_id:
        first = exports.export_files(project, snapshot_id=None)  # nested: same transaction
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COUNT(*), COUNT(DISTINCT (t.topic_id, t.document_id)) "
                "FROM annotate_judgment j JOIN annotate_task t ON t.id = j.task_id "
                "WHERE t.project_id = %s",
                [project.pk],
            )
            n_judgments, n_docs = cursor.fetchone()

        def other_connection():
            try:
                second.update(exports.export_files(project, snapshot_id=snapshot_id))
            finally:
                connection.close()

        reader = threading.Thread(target=other_connection)
        reader.start()
        reader.join()
    return first, second, n_judgments, n_docs
