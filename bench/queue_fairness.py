"""Queue fairness (issue 34, item 1; docs/performance.md, "Queues"): PostgreSQL + Redis + real
Celery workers, the split (one worker on ``interactive``, one on ``bulk``) against the old
set-up (one worker, every task on one first-in-first-out queue) in the same run.

(a) a burst of review requests (as searches queue them), then an import: seconds from
    queueing the import to its Job leaving "Queued";
(b) a large import running, then one review request: seconds from queueing it to the
    worker logging it answered.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sasc_x REDIS_URL=redis://127.0.0.1:6379/N \
      CELERY_BROKER_URL=redis://127.0.0.1:6379/N \
      .venv/bin/python bench/queue_fairness.py --burst 170 --mail /tmp/mail4k

``--mail`` is a folder of mbox files (``bench/mailgen.py --messages 4000 --out /tmp/mail4k``).
"""

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._setup import ROOT, django_setup  # noqa: E402

SAMPLE = ROOT / "tests" / "fixtures" / "emails" / "sample"


def until(condition, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


class Worker:
    def __init__(self, log: Path, queues: tuple[str, ...], name: str):
        from config.celery import worker_command

        self.log = log
        self.command = worker_command(Path(sys.executable).parent, queues=queues)
        self.command += ["-n", f"{name}-{os.getpid()}@%h"]
        self.proc = None

    def start(self) -> "Worker":
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                self.command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        until(lambda: "ready." in self.log.read_text(), 60, f"worker {self.log.name}")
        return self

    def stop(self) -> None:
        import signal

        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def answered(self) -> int:
        text = self.log.read_text()
        return len(re.findall(r"review\.tasks\.review_requests_task\[[^\]]+\] succeeded", text))


def run(mode: str, burst: int, mail: Path, work: Path, n: int) -> dict:
    import redis
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotate import services
    from annotate.models import Collection, Job, Persona
    from config.celery import QUEUES, app
    from review.models import SearchLog
    from review.tasks import review_requests_task

    redis.Redis.from_url(os.environ["CELERY_BROKER_URL"]).flushdb()
    # The old set-up: every task on one FIFO queue, one worker; the split: the routes.
    single = mode == "single"
    if single:
        app.conf.task_routes = {"*": {"queue": "interactive"}}
    else:
        from django.conf import settings

        app.conf.task_routes = settings.CELERY_TASK_ROUTES
    app.amqp.flush_routes()
    app.amqp.__dict__.pop("router", None)
    routed = app.amqp.router.route({}, "annotate.tasks.import_run")["queue"].name
    assert routed == ("interactive" if single else "bulk"), routed

    tag = f"{mode}-{n}-{os.getpid()}"
    user = get_user_model().objects.create_user(f"bench-{tag}")
    collection = Collection.objects.create(name=f"Searched {mode}", slug=f"searched-{tag}")
    persona = Persona.objects.create(name=f"Donor {tag}")
    now = timezone.now()
    searches = [
        SearchLog.objects.create(
            searcher=user, collection=collection, persona=persona, query=f"q{i}", created_at=now
        ).pk
        for i in range(burst + 1)
    ]
    logs = work / tag
    logs.mkdir()
    if single:
        workers = {"both": Worker(logs / "both.log", QUEUES, "both").start()}
        reviews = workers["both"]
    else:
        workers = {q: Worker(logs / f"{q}.log", (q,), q).start() for q in QUEUES}
        reviews = workers["interactive"]
    try:
        # (a) a burst of review requests, then an import of the 40-message sample
        for pk in searches[:burst]:
            review_requests_task.delay(pk)
        target = Collection.objects.create(name=f"Small {mode}", slug=f"small-{tag}")
        queued = time.monotonic()
        job = services.job_import_create(
            collection=target, fmt="emails", path=SAMPLE, label="sample"
        )
        until(lambda: Job.objects.get(pk=job.pk).status != Job.Status.QUEUED, 900, "import")
        import_wait = time.monotonic() - queued
        until(lambda: reviews.answered() >= burst, 900, "the burst")
        until(lambda: Job.objects.get(pk=job.pk).is_finished, 900, "the small import")
        # (b) a large import running, then one review request
        big = Collection.objects.create(name=f"Large {mode}", slug=f"large-{tag}")
        job = services.job_import_create(collection=big, fmt="emails", path=mail, label="large")
        until(lambda: Job.objects.get(pk=job.pk).status == Job.Status.RUNNING, 900, "large import")
        before = reviews.answered()
        queued = time.monotonic()
        review_requests_task.delay(searches[burst])
        until(lambda: reviews.answered() > before, 1800, "the review request")
        review_wait = time.monotonic() - queued
        still_running = Job.objects.get(pk=job.pk).status == Job.Status.RUNNING
        until(lambda: Job.objects.get(pk=job.pk).is_finished, 1800, "the large import")
        return {
            "import_wait": import_wait,
            "review_wait": review_wait,
            "import_running_at_answer": still_running,
        }
    finally:
        for worker in workers.values():
            worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--burst", type=int, default=170, help="review requests in the burst")
    parser.add_argument("--mail", type=Path, required=True, help="folder of mbox files")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if not args.mail.is_dir():
        raise SystemExit(f"--mail: not a folder: {args.mail}")
    if "CELERY_BROKER_URL" not in os.environ:
        raise SystemExit("set CELERY_BROKER_URL (Redis) and DATABASE_URL (PostgreSQL)")
    work = django_setup("queues")
    results = {"split": [], "single": []}
    for n in range(args.repeats):
        for mode in ("single", "split"):
            r = run(mode, args.burst, args.mail, work, n)
            results[mode].append(r)
            print(
                f"{mode:6} (a) import left Queued after {r['import_wait']:6.2f} s "
                f"behind {args.burst} review requests; (b) review request answered after "
                f"{r['review_wait']:6.2f} s (large import still running: "
                f"{r['import_running_at_answer']})",
                flush=True,
            )
    for key, label in (("import_wait", "(a) import wait"), ("review_wait", "(b) review wait")):
        s = min(r[key] for r in results["single"])
        p = min(r[key] for r in results["split"])
        print(f"{label}: single {s:.2f} s, split {p:.2f} s, ratio {s / max(p, 1e-3):.1f}x")


if __name__ == "__main__":
    main()
