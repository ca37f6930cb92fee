"""The multi-host scenarios (issue 35): each drives the hosts over HTTP like browsers and
API clients, injects a fault into the real processes or links, checks the database and
returns a ``Result`` with its figures.

    kill-storm    40 annotators judge and 4 archivists decide through the load balancer;
                  host A (web and workers) is SIGKILLed after 8 s
    kill-import   an import of 4,000 messages; the host running it is SIGKILLed mid-way
    kill-build    an index build; the host running it is SIGKILLed mid-way
    release       a release decided through host A, searched for on host B
    index         an index version built on host A, served by host B after the switch
    cut           host A cut from the database (its back veth down) for 30 s under load
    figures       judging, search and import rates on one application host and on two
"""

import contextlib
import math
import os
import re
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field

import requests

from bench.hosts.cluster import Cluster, Host

ORDER = ["kill-storm", "kill-import", "kill-build", "release", "index", "cut", "figures"]
MARK = "zebrafinch"  # a word only the document released in "release" holds
NEW_MARK = "quokkaberry"  # a word only the documents of a new index version hold


@dataclass
class Result:
    name: str
    passed: bool
    figures: str
    seconds: float = 0.0

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return f"{self.name}: {self.figures} ({self.seconds:.0f} s) -> {verdict}"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[max(0, math.ceil(q * len(values)) - 1)] if values else float("nan")


def wait_until(what: str, condition, timeout: float, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"{what}: not within {timeout:.0f} s")


# --- the driver's own Django, on the database host --------------------------------------------
def django_on(cluster: Cluster) -> None:
    env = cluster.app_env(cluster.a)
    for key in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "CACHE_URL", "SECRET_KEY"):
        os.environ[key] = env[key]
    for key in ("SASC_INDEX_DIR", "SASC_UPLOAD_DIR", "SASC_VAR_DIR", "SASC_JVM_HEAP"):
        os.environ[key] = env[key]
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()


def close_django() -> None:
    from django.apps import apps

    if apps.ready:  # Django started
        from django.db import connections

        connections.close_all()


class Session(requests.Session):
    """One user's HTTP session against one base URL (the load balancer or a host); logged
    in by writing a session row (``force_login``), as the acceptance suite does."""

    def __init__(self, base: str, user):
        from django.conf import settings
        from django.test import Client

        super().__init__()
        self.base = base
        client = Client()
        client.force_login(user)
        name = settings.SESSION_COOKIE_NAME
        self.cookies.set(name, client.cookies[name].value)
        r = self.get("/", timeout=30)
        assert r.status_code == 200 and "csrftoken" in self.cookies, (user, r.status_code)

    def request(self, method, url, **kwargs):
        if url.startswith("/"):
            url = self.base + url
        headers = kwargs.pop("headers", None) or {}
        if method.upper() not in ("GET", "HEAD"):
            headers.setdefault("X-CSRFToken", self.cookies.get("csrftoken", ""))
            headers.setdefault("Referer", self.base + "/")
        kwargs.setdefault("timeout", 60)
        return super().request(method, url, headers=headers, **kwargs)


@dataclass
class World:
    """The data every scenario starts from: a published collection (the sample mail, one
    message holding ``MARK`` and scored sensitive), its index, users of every role."""

    collection: object
    persona: object
    marked: object  # the hidden document the release scenario releases
    lead: object
    searcher: object
    archivists: list
    annotators: list
    extra: dict = field(default_factory=dict)

    @classmethod
    def make(cls, cluster: Cluster) -> "World":
        django_on(cluster)
        from annotate import roles, services
        from annotate.models import Collection, Persona
        from review.models import Publication
        from tests.conftest import SAMPLE
        from tests.reviewkit import store_scores

        def user(name, role):
            return services.user_create(username=name, password=uuid.uuid4().hex, role_names=[role])

        c = Collection.objects.create(name="Hosts", slug="hosts")
        services.import_run(collection=c, fmt="emails", path=SAMPLE)
        docs = list(c.documents.order_by("id"))
        marked = docs[0]
        marked.body = f"{marked.body}\n{MARK}\n"
        marked.save(update_fields=["body"])
        built_by_a_worker(c)
        c.refresh_from_db()
        persona = Persona.objects.create(name="Donor")
        scores = [0.95 if d.pk == marked.pk or i % 3 == 0 else 0.05 for i, d in enumerate(docs)]
        store_scores(c, persona, [d.docid for d in docs], scores, cluster.shared / "model.joblib")
        Publication.objects.create(collection=c, persona=persona, published=True, band_low=0.2)
        return cls(
            collection=c,
            persona=persona,
            marked=marked,
            lead=user("lead", roles.LEAD),
            searcher=user("searcher", roles.SEARCHER),
            archivists=[user(f"archivist{i}", roles.ARCHIVIST) for i in range(4)],
            annotators=[user(f"annotator{i:02d}", roles.ANNOTATOR) for i in range(40)],
        )


def built_by_a_worker(collection) -> None:
    """Build the collection's index as a job on the hosts' workers and wait for it. Never in
    the driver: a JVM started in this process takes over SIGINT and SIGTERM, and Ctrl-C
    would no longer reach the cleanup."""
    from annotate.models import Job
    from ranking.services import job_index_create

    job = job_index_create(collection=collection)
    wait_until(
        f"the index of {collection.slug}",
        lambda: Job.objects.filter(pk=job.pk, status__in=["succeeded", "failed"]).exists(),
        300,
    )
    job.refresh_from_db()
    if job.status != "succeeded":
        raise RuntimeError(f"index build of {collection.slug}: {job.message}")


def heal(cluster: Cluster) -> None:
    """Between scenarios: links up, every application host running."""
    for host in cluster.apps:
        cluster.mend(host)
        if not all(p.running() for p in host.procs.values()):
            for p in host.procs.values():
                p.stop(timeout=5)
            host.procs.clear()
            cluster.app_up(host)


def received(host: Host, task: str) -> int:
    """How many times the host's workers logged receiving ``task`` (Celery's "Task
    <name>[<id>] received"; the start-up banner lists the names too, without "received")."""
    return sum(
        len(re.findall(rf"Task {re.escape(task)}\[[^\]]+\] received", proc.tail(10**7)))
        for name, proc in host.procs.items()
        if name.startswith("worker")
    )


def host_running(cluster: Cluster, task: str, before: dict) -> Host | None:
    """The application host whose workers received ``task`` since ``before`` was counted."""
    for host in cluster.apps:
        if received(host, task) > before[host.name]:
            return host
    return None


# --- (a) kill a host in a judging storm -------------------------------------------------------
def _storm_project(world: World, name: str, n_tasks: int):
    from annotate import projects
    from annotate.models import Topic

    docs = list(world.collection.documents.order_by("id"))
    topics = [
        Topic.objects.create(collection=world.collection, number=f"{name}-{n}", title=f"t{n}")
        for n in range(1, 1 + max(1, n_tasks // len(docs)))
    ]
    p = projects.project_create(
        name=name,
        collection=world.collection,
        personas=[world.persona],
        topics=topics,
        annotators=world.annotators,
        overlap=1,
    )
    for t in topics:
        projects.project_tasks_add(
            project=p, round_=p.rounds.get(), topic=t, persona=world.persona, documents=docs
        )
    return p


def _judge_loop(
    session: Session, slug: str, until: float, acked: list, lock, counts, think: float = 0.0
) -> None:
    body = {
        "relevance": 1,
        "persona_sensitive": "no",
        "personal_sensitive": "no",
        "comment": "",
        "active_seconds": 3.0,
        "started_at": "2026-11-21T10:00:00Z",
    }
    while time.monotonic() < until:
        time.sleep(think)
        try:
            r = session.post(f"/api/projects/{slug}/tasks/next/", timeout=30)
        except requests.RequestException:
            counts["transport"] += 1
            continue
        if r.status_code == 204:
            return
        if r.status_code != 200:
            counts[r.status_code] = counts.get(r.status_code, 0) + 1
            time.sleep(0.2)
            continue
        task = r.json()["task"]
        key = uuid.uuid4().hex
        # the same key until the server answers: a retry is safe
        s = _post_until_answered(
            session,
            f"/api/tasks/{task}/judgment/",
            counts,
            json=body,
            headers={"Idempotency-Key": key},
        )
        if s is not None and s.status_code in (200, 201):
            with lock:
                acked.append((task, session.user_id, s.json()["id"]))


def _post_until_answered(session: Session, path: str, counts: dict, **kwargs):
    """POST ``path`` until the server answers below 500: a lost connection or a 5xx (the
    killed host, through nginx) is counted in ``counts`` and sent again 0.2 s later, 20 times
    at most. The answer below 500, or None."""
    for _attempt in range(20):
        try:
            r = session.post(path, timeout=30, **kwargs)
        except requests.RequestException:
            counts["transport"] += 1
            time.sleep(0.2)
            continue
        counts[r.status_code] = counts.get(r.status_code, 0) + 1
        if r.status_code < 500:
            return r
        time.sleep(0.2)
    return None


def _decide_loop(session: Session, world: World, docs: list, acked: list, lock, counts) -> None:
    for doc in docs:
        r = _post_until_answered(
            session,
            f"/review/{world.persona.pk}/{doc.pk}/decide/",
            counts,
            data={"kind": "withhold", "note": f"storm {doc.pk}"},
            allow_redirects=False,
        )
        if r is not None and r.status_code == 302:
            with lock:
                acked.append(doc.pk)


def kill_storm(cluster: Cluster, world: World) -> Result:
    from annotate.models import Judgment
    from review.models import Decision

    project = _storm_project(world, "storm", 1200)
    lb = f"http://{cluster.lb.front}"
    annotators = []
    for u in world.annotators:
        s = Session(lb, u)
        s.user_id = u.pk
        annotators.append(s)
    archivists = [Session(lb, u) for u in world.archivists]
    docs = list(world.collection.documents.order_by("-id"))[:40]
    acked, decided, counts, lock = [], [], {"transport": 0}, threading.Lock()
    until = time.monotonic() + 25
    threads = [
        threading.Thread(target=_judge_loop, args=(s, project.slug, until, acked, lock, counts))
        for s in annotators
    ] + [
        threading.Thread(target=_decide_loop, args=(s, world, docs[i::4], decided, lock, counts))
        for i, s in enumerate(archivists)
    ]
    for t in threads:
        t.start()
    time.sleep(8)
    cluster.app_kill(cluster.a)
    killed_at = len(acked)
    for t in threads:
        t.join(120)
    stored = list(
        Judgment.objects.filter(task__project=project).values_list("task_id", "annotator_id", "id")
    )
    stored_set = {(t, a) for t, a, _ in stored}
    missing = [a for a in acked if (a[0], a[1]) not in stored_set]
    dup_rows = len(stored) - len(stored_set)
    mismatched = [a for a in acked if a[2] not in {s[2] for s in stored}]
    decisions = list(
        Decision.objects.filter(note__startswith="storm ").values_list("document_id", flat=True)
    )
    dec_missing = [d for d in decided if d not in decisions]
    dec_dups = len(decisions) - len(set(decisions))
    passed = (
        not missing
        and not dup_rows
        and not mismatched
        and not dec_missing
        and not dec_dups
        and killed_at > 0
        and len(acked) > killed_at
        and len(decided) == len(docs)
    )
    return Result(
        "kill-storm",
        passed,
        f"{len(acked)} judgments acknowledged ({killed_at} before the kill), "
        f"{len(stored)} stored, {len(missing)} acknowledged but missing, {dup_rows} duplicates; "
        f"{len(decided)}/{len(docs)} decisions acknowledged, {len(dec_missing)} missing, "
        f"{dec_dups} duplicates; answers {dict(sorted(counts.items(), key=str))}",
    )


# --- (a) kill the host running an import or an index build --------------------------------
_TASKS = {"build": "ranking.tasks.index_build_task", "import": "annotate.tasks.import_run"}


def _kill_job(cluster: Cluster, world: World, kind: str) -> Result:
    from annotate import services
    from annotate.models import Collection, Job
    from bench.mailgen import generate
    from ranking.services import job_index_create

    name = f"kill-{kind}"
    c = Collection.objects.create(name=name, slug=name)
    folder = cluster.shared / "uploads" / name
    n = 4000
    generate(folder, n, per_file=500)
    before = {h.name: received(h, task) for h in cluster.apps for task in [_TASKS[kind]]}
    if kind == "build":
        services.import_run(collection=c, fmt="emails", path=folder)
        c.refresh_from_db()
        job = job_index_create(collection=c)
        task = "ranking.tasks.index_build_task"
    else:
        job = services.job_import_create(collection=c, fmt="emails", path=folder, label=name)
        task = "annotate.tasks.import_run"
    wait_until(
        f"{name}: the job running with progress",
        lambda: Job.objects.filter(pk=job.pk, status="running", progress_done__gt=0).exists(),
        180,
        0.2,
    )
    victim = wait_until(
        f"{name}: the host running it", lambda: host_running(cluster, task, before), 30
    )
    progress = Job.objects.get(pk=job.pk)
    killed_at = f"{progress.progress_done}/{progress.progress_total}"
    cluster.app_kill(victim)
    t0 = time.monotonic()
    other = cluster.b if victim is cluster.a else cluster.a
    other_before = received(other, task)
    try:
        wait_until(
            f"{name}: the job to finish on host {other.name}",
            lambda: Job.objects.filter(pk=job.pk, status__in=["succeeded", "failed"]).exists(),
            400,
            1,
        )
    except TimeoutError as exc:
        job.refresh_from_db()
        return Result(
            name,
            False,
            f"host {victim.name} SIGKILLed at {killed_at}; {exc}; job {job.status}: {job.message}",
        )
    finished = time.monotonic() - t0
    job.refresh_from_db()
    c.refresh_from_db()
    docs = c.documents.count()
    distinct = c.documents.values("docid").distinct().count()
    # what the import queued in turn (the entities, an index build) may still run: it must
    # end too, and no job may stay "Running"
    with contextlib.suppress(TimeoutError):
        wait_until("no job running", lambda: not Job.objects.filter(status="running").exists(), 300)
    running = Job.objects.filter(status="running").count()
    ran_on_other = received(other, task) > other_before
    ok_docs = docs == distinct and docs >= n * 0.95
    if kind == "build":
        ok_docs = ok_docs and c.indexed_version == c.version
    passed = job.status == "succeeded" and ok_docs and running == 0 and ran_on_other
    return Result(
        name,
        passed,
        f"host {victim.name} SIGKILLed at {killed_at}; job {job.status} on host {other.name} "
        f"{finished:.0f} s later ({job.message[:90]}); {docs} documents, {distinct} distinct"
        + (f", indexed version {c.indexed_version} of {c.version}" if kind == "build" else "")
        + f"; {running} jobs left running",
    )


def kill_import(cluster: Cluster, world: World) -> Result:
    return _kill_job(cluster, world, "import")


def kill_build(cluster: Cluster, world: World) -> Result:
    return _kill_job(cluster, world, "build")


# --- (c) a release through host A, seen by a searcher on host B -------------------------------
def _search_shows(session: Session, slug: str, query: str, doc_pk: int) -> tuple[int, bool]:
    r = session.post(f"/search/{slug}/", {"q": query}, timeout=60)
    return r.status_code, f"/documents/{doc_pk}/" in r.text


def release(cluster: Cluster, world: World) -> Result:
    slug = world.collection.slug
    searcher = Session(f"http://{cluster.b.front}:8000", world.searcher)
    archivist = Session(f"http://{cluster.a.front}:8000", world.archivists[0])
    # warm host B's processes: every gunicorn worker holds its view before the release
    for _ in range(2 * cluster.gunicorn_workers + 2):
        status, shown = _search_shows(searcher, slug, MARK, world.marked.pk)
        if status != 200 or shown:
            return Result("release", False, f"before the release: {status}, shown {shown}")
    r = archivist.post(
        f"/review/{world.persona.pk}/{world.marked.pk}/decide/",
        {"kind": "release", "note": "hosts release"},
        allow_redirects=False,
    )
    decided = time.monotonic()
    if r.status_code != 302:
        return Result("release", False, f"the decision through host A answered {r.status_code}")
    seen_after, polls = None, 0
    while time.monotonic() - decided < 10:
        polls += 1
        status, shown = _search_shows(searcher, slug, MARK, world.marked.pk)
        if shown:
            seen_after = time.monotonic() - decided
            break
    # and every process of host B sees it now
    every = all(_search_shows(searcher, slug, MARK, world.marked.pk)[1] for _ in range(6))
    passed = seen_after is not None and seen_after <= 2.0 and every
    return Result(
        "release",
        passed,
        "released through host A; a searcher on host B saw it after "
        + (f"{seen_after * 1000:.0f} ms ({polls} searches)" if seen_after else "more than 10 s")
        + f"; the next 6 searches on B {'all show it' if every else 'do NOT all show it'}",
    )


# --- (d) an index version built on host A, served by host B --------------------------------
def _scores_version(collection, persona, version: int, path) -> None:
    """Store every document of the collection as safe (0.05), as the persona's classifier
    ``version`` (what training stores: a joblib file and its row)."""
    import joblib
    from django.utils import timezone

    from ranking.models import SensitivityModel

    docids = list(collection.documents.values_list("docid", flat=True))
    joblib.dump({"docids": docids, "scores": [0.05] * len(docids)}, path)
    SensitivityModel.objects.create(
        collection=collection,
        persona=persona,
        version=version,
        source="hosts",
        report={},
        path=str(path),
        trained_at=timezone.now(),
        seconds=0.1,
    )


def index(cluster: Cluster, world: World) -> Result:
    from annotate import services
    from annotate.models import Collection, Job
    from bench.mailgen import generate
    from ranking.services import job_index_create
    from review.models import Publication

    c = Collection.objects.create(name="Versions", slug="versions")
    folder = cluster.shared / "uploads" / "versions"
    generate(folder, 3000, per_file=500, seed=7)
    services.import_run(collection=c, fmt="emails", path=folder)
    built_by_a_worker(c)
    c.refresh_from_db()
    old_version = c.indexed_version
    docs = list(c.documents.order_by("id"))
    _scores_version(c, world.persona, 1, cluster.shared / "v1.joblib")
    Publication.objects.create(collection=c, persona=world.persona, published=True, band_low=0.2)
    # the new version: messages that only it holds
    newer = cluster.shared / "uploads" / "versions-new"
    newer.mkdir()
    (newer / "new.eml").write_text(
        f"From: a@example.org\nTo: b@example.org\nSubject: {NEW_MARK} minutes\n"
        f"Message-ID: <new-1@example.org>\n\nThe {NEW_MARK} minutes of the meeting.\n"
    )
    services.import_run(collection=c, fmt="emails", path=newer)
    c.refresh_from_db()
    new_doc = c.documents.get(subject__startswith=NEW_MARK)
    _scores_version(c, world.persona, 2, cluster.shared / "v2.joblib")
    # only host A's worker takes the build: B's workers are stopped meanwhile
    b_workers = [p for n, p in cluster.b.procs.items() if n.startswith("worker")]
    for p in b_workers:
        p.stop()
    searcher = Session(f"http://{cluster.b.front}:8000", world.searcher)
    old_doc = docs[0]
    query = old_doc.subject.split()[0] if old_doc.subject else "the"
    # every gunicorn process of B warm (Lucene's analyzer loads a JVM on the first search)
    _warm_search(searcher, cluster, world, c.slug)
    answers, errors, stop = [], [], threading.Event()

    def search_on_b():
        while not stop.is_set():
            t = time.monotonic()
            try:
                r = searcher.post(f"/search/{c.slug}/", {"q": query}, timeout=60)
                answers.append((r.status_code, time.monotonic() - t, "/documents/" in r.text))
            except requests.RequestException as exc:
                errors.append(exc)

    thread = threading.Thread(target=search_on_b)
    thread.start()
    built_before = received(cluster.a, "ranking.tasks.index_build_task")
    job = job_index_create(collection=c)
    try:
        wait_until(
            "the build on host A",
            lambda: Job.objects.filter(pk=job.pk, status__in=["succeeded", "failed"]).exists(),
            300,
            0.5,
        )
        switched = time.monotonic()
        seen = None
        while time.monotonic() - switched < 10:
            r = searcher.post(f"/search/{c.slug}/", {"q": NEW_MARK}, timeout=60)
            if f"/documents/{new_doc.pk}/" in r.text:
                seen = time.monotonic() - switched
                break
    finally:
        stop.set()
        thread.join(120)
        for p in b_workers:
            p.start()
    job.refresh_from_db()
    c.refresh_from_db()
    built_on_a = received(cluster.a, "ranking.tasks.index_build_task") > built_before
    bad = [a for a in answers if a[0] != 200 or not a[2]]
    passed = (
        job.status == "succeeded"
        and built_on_a
        and c.indexed_version == c.version
        and c.indexed_version != old_version
        and seen is not None
        and not bad
        and not errors
        and len(answers) >= 3
    )
    lat = [a[1] for a in answers]
    return Result(
        "index",
        passed,
        f"version {old_version} -> {c.indexed_version} built on host A ({job.message[:70]}); "
        f"{len(answers)} searches on host B during the build, {len(bad)} failed or empty, "
        f"{len(errors)} transport errors, p95 {pct(lat, 0.95) * 1000:.0f} ms; the new version's "
        f"message found on B "
        + (f"{seen * 1000:.0f} ms after the switch" if seen is not None else "NOT within 10 s"),
    )


# --- (b) host A cut from the database for 30 s ----------------------------------------------
def cut(cluster: Cluster, world: World) -> Result:
    from annotate.models import Judgment

    project = _storm_project(world, "cut", 1600)
    lb = f"http://{cluster.lb.front}"
    annotators = []
    for u in world.annotators[:8]:
        s = Session(lb, u)
        s.user_id = u.pk
        annotators.append(s)
    direct = Session(f"http://{cluster.a.front}:8000", world.lead)
    acked, counts, lock = [], {"transport": 0}, threading.Lock()
    probes: list[tuple[float, int | str, float]] = []  # (since the cut, status, seconds)
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            t = time.monotonic()
            try:
                url = f"/api/projects/{project.slug}/progress/"
                status = direct.get(url, timeout=90).status_code
            except requests.RequestException as exc:
                status = type(exc).__name__
            probes.append((t - cut_at, status, time.monotonic() - t))
            time.sleep(0.25)

    cut_at = time.monotonic() + 5
    until = cut_at + 30 + 25
    threads = [
        threading.Thread(
            target=_judge_loop, args=(s, project.slug, until, acked, lock, counts, 0.5)
        )
        for s in annotators
    ] + [threading.Thread(target=probe)]
    for t in threads:
        t.start()
    time.sleep(max(0.0, cut_at - time.monotonic()))
    cluster.cut(cluster.a)
    time.sleep(30)
    cluster.mend(cluster.a)
    mended = time.monotonic() - cut_at
    for t in threads[:-1]:
        t.join(180)
    with contextlib.suppress(TimeoutError):
        wait_until(
            "host A answering again",
            lambda: any(p[0] >= mended and p[1] == 200 for p in probes[-3:]),
            120,
        )
    stop.set()
    threads[-1].join(120)
    during = [p for p in probes if 0 <= p[0] < 30]
    errors_during = [p for p in during if p[1] != 200]
    recovered = next((p[0] - mended for p in probes if p[0] >= mended and p[1] == 200), None)
    stored = list(
        Judgment.objects.filter(task__project=project).values_list("task_id", "annotator_id")
    )
    missing = [a for a in acked if (a[0], a[1]) not in set(stored)]
    dups = len(stored) - len(set(stored))
    error_seconds = [p[2] for p in errors_during]
    after_ok = recovered is not None and all(
        p[1] == 200 for p in probes if p[0] >= mended + recovered
    )
    quick = bool(error_seconds) and pct(error_seconds, 0.95) <= 10
    passed = quick and recovered is not None and after_ok and not missing and not dups
    return Result(
        "cut",
        passed,
        f"host A's back link down 30 s: {len(during)} requests to A meanwhile, "
        f"{len(errors_during)} errors ({sorted({str(p[1]) for p in errors_during})}) answered in "
        f"p50 {statistics.median(error_seconds) if error_seconds else float('nan'):.1f} s / "
        f"max {max(error_seconds) if error_seconds else float('nan'):.1f} s; A answered 200 again "
        + (f"{recovered:.1f} s after the link came back" if recovered is not None else "NEVER")
        + f"; {len(acked)} judgments acknowledged through the balancer, {len(missing)} missing, "
        f"{dups} duplicates; answers {dict(sorted(counts.items(), key=str))}",
    )


# --- scale figures: one application host against two, in the same run ---------------------
def _judging_rate(bases: str, world: World, slug: str, seconds: float) -> tuple[float, int]:
    sessions = []
    for u in world.annotators:
        s = Session(bases, u)
        s.user_id = u.pk
        sessions.append(s)
    acked, counts, lock = [], {"transport": 0}, threading.Lock()
    started = time.monotonic()
    threads = [
        threading.Thread(target=_judge_loop, args=(s, slug, started + seconds, acked, lock, counts))
        for s in sessions
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    errors = sum(n for k, n in counts.items() if k == "transport" or int(k) >= 500)
    return len(acked) / (time.monotonic() - started), errors


def _warm_search(session: Session, cluster: Cluster, world: World, slug: str = "") -> None:
    """Search until 2 x gunicorn workers searches in a row take under a second: each
    process has loaded Lucene's analyzer (a JVM, several seconds) by then."""
    quick, deadline = 0, time.monotonic() + 120
    while quick < 2 * cluster.gunicorn_workers and time.monotonic() < deadline:
        t = time.monotonic()
        session.post(f"/search/{slug or world.collection.slug}/", {"q": "meeting"}, timeout=60)
        quick = quick + 1 if time.monotonic() - t < 1.0 else 0


def _search_rate(base: str, world: World, users: int, seconds: float):
    words = ["meeting", "report", "linux", "spam", "list", "mail", "server", "time", "help"]
    sessions = [Session(base, world.searcher) for _ in range(users)]
    latencies, bad, lock = [], [0], threading.Lock()
    started = time.monotonic()

    def loop(n, s):
        i = n
        while time.monotonic() - started < seconds:
            t = time.monotonic()
            try:
                r = s.post(f"/search/{world.collection.slug}/", {"q": words[i % len(words)]})
                ok = r.status_code == 200
            except requests.RequestException:
                ok = False
            with lock:
                latencies.append(time.monotonic() - t)
                bad[0] += not ok
            i += 1

    threads = [threading.Thread(target=loop, args=(n, s)) for n, s in enumerate(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    return len(latencies) / (time.monotonic() - started), pct(latencies, 0.95), bad[0]


def _import_rate(cluster: Cluster, tag: str, imports: int, messages: int) -> float:
    from annotate import services
    from annotate.models import Collection, Job
    from bench.mailgen import generate

    jobs = []
    for n in range(imports):
        folder = cluster.shared / "uploads" / f"rate-{tag}-{n}"
        generate(folder, messages, per_file=500, seed=100 + n)
        c = Collection.objects.create(name=f"rate {tag} {n}", slug=f"rate-{tag}-{n}")
        jobs.append((c, folder))
    started = time.monotonic()
    ids = [
        services.job_import_create(collection=c, fmt="emails", path=f, label=f.name).pk
        for c, f in jobs
    ]
    wait_until(
        f"imports {tag}",
        lambda: Job.objects.filter(pk__in=ids, status="succeeded").count() == len(ids),
        600,
        0.5,
    )
    return imports * messages / (time.monotonic() - started)


def figures(cluster: Cluster, world: World) -> Result:
    """Judging tasks/s and searches/s on one application host (clients straight to host A's
    gunicorn) and on two (through the balancer); p95 of a search with 100 searchers at
    once; import msg/s with one worker host (B's workers stopped) and two."""
    seconds = 15
    project = _storm_project(world, "rate", 3000)
    one_host = f"http://{cluster.a.front}:8000"
    lb = f"http://{cluster.lb.front}"
    j1, j1_err = _judging_rate(one_host, world, project.slug, seconds)
    j2, j2_err = _judging_rate(lb, world, project.slug, seconds)
    for host in cluster.apps:  # every gunicorn process with its JVM loaded before timing
        _warm_search(Session(f"http://{host.front}:8000", world.searcher), cluster, world)
    s1, p1, s1_bad = _search_rate(one_host, world, 100, seconds)
    s2, p2, s2_bad = _search_rate(lb, world, 100, seconds)
    b_workers = [p for n, p in cluster.b.procs.items() if n.startswith("worker")]
    for p in b_workers:
        p.stop()
    try:
        i1 = _import_rate(cluster, "one", 2, 1500)
    finally:
        for p in b_workers:
            p.start()
    time.sleep(10)  # B's workers connected to the broker
    i2 = _import_rate(cluster, "two", 2, 1500)
    passed = not (j1_err or j2_err or s1_bad or s2_bad)
    return Result(
        "figures",
        passed,
        f"judging {j1:.1f} -> {j2:.1f} tasks/s (x{j2 / j1:.2f}, errors {j1_err}/{j2_err}); "
        f"100 searchers {s1:.1f} -> {s2:.1f} searches/s (x{s2 / s1:.2f}), p95 "
        f"{p1 * 1000:.0f} -> {p2 * 1000:.0f} ms, failed {s1_bad}/{s2_bad}; two imports of "
        f"1,500 messages {i1:.0f} -> {i2:.0f} msg/s (x{i2 / i1:.2f}); one host -> two",
    )


SCENARIOS = {
    "kill-storm": kill_storm,
    "kill-import": kill_import,
    "kill-build": kill_build,
    "release": release,
    "index": index,
    "cut": cut,
    "figures": figures,
}
