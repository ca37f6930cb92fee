"""A deliberately broken build, to show that a scenario can fail: patch the code named by
``SASC_HOSTS_BROKEN`` in this process, then run ``gunicorn`` or ``celery`` as
``python -m`` would. Used only by ``bench/hosts/run.py --broken NAME``.

    stale-view      review.visibility keys a publication's visible set without the last
                    decision: a process never notices a release decided in another one (c)
    publish-first   an index build records the new version before writing it, as a build
                    in place would: other hosts read a half-built index (d)
    write-behind    the judging API answers as soon as the judgment is written, and commits it
                    a second later in a thread: a host killed meanwhile loses what it
                    acknowledged (a, the judging storm)
    no-acks-late    workers acknowledge a task when they receive it, and a job whose worker
                    died is failed, not run again: a host killed mid-import loses it (a)
"""

import os
import runpy
import sys

BROKEN = {"stale-view", "publish-first", "no-acks-late", "write-behind"}


def _stale_view() -> None:
    from review import visibility

    key = visibility._key

    def key_without_decisions(publication):
        return key(publication)._replace(newest_decision=None)

    visibility._key = key_without_decisions


def _publish_first() -> None:
    from django.db import transaction

    from annotate.models import Collection
    from ranking import services

    build = services.index_build

    def published_then_built(*, collection_id, progress=None, force=False):
        with transaction.atomic():
            c = Collection.objects.select_for_update().get(pk=collection_id)
            c.indexed_version = c.version
            c.save(update_fields=["indexed_version"])
        return build(collection_id=collection_id, progress=progress, force=True)

    services.index_build = published_then_built


def _write_behind() -> None:
    import queue
    import threading
    import time

    from django.db import connection, transaction

    from annotate import judgments

    submit = judgments.judgment_submit

    def answered_then_committed(**kwargs):
        answer = queue.Queue()

        def write():
            try:
                with transaction.atomic():
                    answer.put(submit(**kwargs))
                    time.sleep(1.0)  # committed a second after the client was told
            except Exception as exc:
                answer.put(exc)
            finally:
                connection.close()

        threading.Thread(target=write, daemon=True).start()
        result = answer.get()
        if isinstance(result, Exception):
            raise result
        return result

    judgments.judgment_submit = answered_then_committed


def _no_acks_late() -> None:
    from django.conf import settings

    from annotate import jobs
    from config.celery import app

    settings.CELERY_TASK_ACKS_LATE = False
    settings.CELERY_TASK_REJECT_ON_WORKER_LOST = False
    app.loader.import_default_modules()
    for task in app.tasks.values():
        task.acks_late = False
        task.reject_on_worker_lost = False
    if hasattr(jobs, "jobs_requeue_stale"):
        jobs.jobs_requeue_stale = lambda **kwargs: 0


def main() -> None:
    broken = os.environ.get("SASC_HOSTS_BROKEN", "")
    if broken not in BROKEN:
        sys.exit(f"SASC_HOSTS_BROKEN={broken!r}: expected one of {', '.join(sorted(BROKEN))}")
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    patches = {
        "stale-view": _stale_view,
        "publish-first": _publish_first,
        "no-acks-late": _no_acks_late,
        "write-behind": _write_behind,
    }
    patches[broken]()
    print(f"BROKEN BUILD: {broken}", file=sys.stderr, flush=True)
    module, sys.argv = sys.argv[1], sys.argv[1:]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
