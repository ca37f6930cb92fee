"""Set up the demo (corpus, personas, topics, index, users) and run web and worker."""

import contextlib
import logging
import os
import re
import socket
import sys
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from tqdm import tqdm

from annotate import projects, roles, services
from annotate.models import AnnotationProject, Collection, Persona, Round
from config.celery import worker_command
from config.demo import corpus, statics
from config.demo.supervisor import Stop, Supervisor
from config.env import env_int
from ranking import services as ranking_services
from ranking.models import SensitivityModel

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
SAMPLE_DIR = Path(settings.BASE_DIR) / "tests" / "fixtures" / "emails" / "sample"
SLUG = "spamassassin-ham"
PERSONA = "Maeve Gallagher"
USERS = [
    ("lead", roles.LEAD),
    ("annotator1", roles.ANNOTATOR),
    ("annotator2", roles.ANNOTATOR),
    ("archivist", roles.ARCHIVIST),
    ("searcher", roles.SEARCHER),
]
PASSWORD = "sasc-demo"  # noqa: S105 (the printed demo credential, local only)


def _free_port(preferred: int) -> int:
    """The first port from ``preferred`` on that a server could listen on. SO_REUSEADDR as
    gunicorn sets it, so a port holding only the last run's closed connections (TIME_WAIT)
    counts as free: without it a restart moved to the next port for a minute."""
    for port in range(preferred, preferred + 50):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port from {preferred} to {preferred + 49} (set SASC_PORT)")


class Command(BaseCommand):
    help = "Prepare the demo collection and users, then run the web server and a Celery worker."

    def add_arguments(self, parser):
        parser.add_argument("--setup-only", action="store_true", help="prepare, do not serve")
        parser.add_argument("--port", type=int, default=env_int("SASC_PORT", 8000, minimum=1))

    def handle(self, *args, **opts):
        try:
            self.setup()
        except KeyboardInterrupt:
            # Every step is redone or resumed on the next start (imports skip what they hold).
            self.stderr.write("\nInterrupted during setup; the next start picks up from here.")
            raise SystemExit(130) from None
        if not opts["setup_only"]:
            self.serve(opts["port"])

    def say(self, text):
        self.stdout.write(text)
        self.stdout.flush()

    @contextlib.contextmanager
    def step(self, label: str):
        """Time a step of the setup; say how long it took when that was noticeable."""
        started = time.perf_counter()
        yield
        seconds = time.perf_counter() - started
        self.timings.append((label, seconds))
        if seconds >= 2:
            self.say(f"  ({label}: {seconds:.1f} s)")

    def setup(self):
        """Prepare what is missing, and only that: a second run finds everything in place."""
        # kombu warns on every connection to the quickstart's folder broker, whose URL has
        # no host by design.
        logging.getLogger("kombu.connection").setLevel(logging.ERROR)
        self.timings = []
        started = time.perf_counter()
        with self.step("migrate"):
            self.migrate()
        with self.step("static files"):
            statics.collect_if_changed(self.say)
        services.roles_ensure()
        collection = Collection.objects.filter(slug=SLUG).first()
        loaded = Path(settings.VAR_DIR) / ".demo-corpus-loaded"
        # The marker is written after the last folder: an import cut short runs again (it
        # skips the messages already stored).
        complete = loaded.is_file() and loaded.read_text().strip() == str(
            getattr(collection, "pk", "")
        )
        if collection is None or not collection.documents.exists() or not complete:
            with self.step("corpus"):
                self.load_corpus()
            collection = Collection.objects.get(slug=SLUG)
            loaded.write_text(f"{collection.pk}\n")
        else:
            self.say(f"Demo collection present: {collection.documents.count()} messages")
        if not Persona.objects.exists():
            services.import_recorded(
                collection=None, fmt="personas", path=DEMO_DIR / "personas.json"
            )
        # Imported once: a re-import would find every topic present and record a job anyway.
        if not collection.topics.exists():
            _job, report = services.import_recorded(
                collection=collection, fmt="topics-trec", path=DEMO_DIR / "topics.txt"
            )
            self.say(f"Topics: {report.summary()}")
        if not collection.index_is_current:
            with self.step("index"):
                self.build_index(collection)
            collection.refresh_from_db()
        with self.step("users"):
            users = self.ensure_users()
        if not AnnotationProject.objects.filter(collection=collection).exists():
            self.say("Creating the demo projects (BM25 pools over the ten topics) ...")
            with self.step("projects"):
                self.create_project(collection, [users["annotator1"], users["annotator2"]])
        self.publish(collection, users.get("lead"))
        self.say(f"Demo ready ({time.perf_counter() - started:.1f} s)")

    def migrate(self):
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if plan:
            self.say(f"Creating the database tables ({len(plan)} migrations) ...")
            call_command("migrate", verbosity=0)

    def ensure_users(self):
        """Create the demo users that are missing (hashing a password costs a quarter
        second, so existing users are left as they are)."""
        User = get_user_model()
        existing = {u.username: u for u in User.objects.filter(username__in=dict(USERS))}
        users = {}
        missing = [u for u, role in USERS if u not in existing]
        if missing:
            self.say(f"Creating the demo users ({', '.join(missing)}) ...")
        for username, role in USERS:
            if username in existing and existing[username].groups.filter(name=role).exists():
                users[username] = existing[username]
            else:
                users[username] = services.user_create(
                    username=username, password=PASSWORD, role_names=[role]
                )
        return users

    @contextlib.contextmanager
    def native_output_to(self, path: Path):
        """Send what native code (the JVM and Lucene's logging) writes to file descriptors
        1 and 2 into ``path``; this command's own lines and progress bars still reach the
        console."""
        sys.stdout.flush()
        sys.stderr.flush()
        saved = (os.dup(1), os.dup(2))
        console_out = open(saved[0], "w", buffering=1, closefd=False)  # noqa: SIM115
        console_err = open(saved[1], "w", buffering=1, closefd=False)  # noqa: SIM115
        old = (sys.stdout, sys.stderr, self.stdout._out)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            sys.stdout, sys.stderr = console_out, console_err
            if self.stdout._out is old[0]:
                self.stdout._out = console_out
            try:
                yield
            finally:
                console_out.flush()
                console_err.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                sys.stdout, sys.stderr, self.stdout._out = old
                os.close(saved[0])
                os.close(saved[1])

    def build_index(self, collection):
        log = Path(settings.VAR_DIR) / "log" / "index.log"
        with self.native_output_to(log):
            self._build_index(collection, log)

    def _build_index(self, collection, log):
        count = collection.documents.count()
        self.say(f"Starting Java and Lucene (pyserini; once per process; its messages: {log}) ...")
        started = time.perf_counter()
        from core import lucene

        lucene.warm()
        self.say(f"  ready in {time.perf_counter() - started:.1f} s")
        bar = tqdm(total=count, desc="Lucene index", unit="msg", mininterval=0.5)
        state = {"features": False}

        def progress(n, total):
            half = total // 2
            if n <= half:
                bar.update(n - bar.n)
            if n >= half and not state["features"]:
                state["features"] = True
                bar.close()
                self.say(f"Computing TF-IDF features of {count} messages ...")

        started = time.perf_counter()
        try:
            result = ranking_services.index_recorded(collection=collection, progress=progress)
        finally:
            bar.close()
        self.say(
            f"Indexed {result['documents']} messages in {time.perf_counter() - started:.1f} s "
            f"(Lucene {result['lucene_seconds']} s, TF-IDF {result['features_seconds']} s, "
            f"latent topics {result['latent_seconds']} s)"
        )

    def publish(self, collection, lead=None):
        """Open the collection to the demo searcher, protected for the demo persona, on day
        one: the persona's classifier trained on the demo's stand-in labels (``day_one``),
        then the band ``core.routing.band_rule`` chooses at ``review.services.BAND_RULE``,
        saved through the lead's service and audited as the demo's lead."""
        from review.models import Publication

        persona = Persona.objects.filter(name=PERSONA).first()
        if persona is None:
            return
        publication, _created = Publication.objects.get_or_create(
            collection=collection, defaults={"persona": persona, "published": True}
        )
        if not SensitivityModel.objects.filter(collection=collection, persona=persona).exists():
            with self.step("day one"):
                self.day_one(publication, lead)

    def day_one(self, publication, lead):
        """Label, train, choose the band (docs/publishing.md, "Day one")."""
        from ranking.classifier import ClassifierError, sensitivity_model_train
        from review import services as review_services

        collection, persona = publication.collection, publication.persona
        labels = stand_in_labels(collection=collection, persona=persona)
        positives = sum(labels.values())
        self.say(
            f"Day one: {len(labels)} stand-in labels for {persona.name} ({positives} sensitive: "
            "her kinds of personal data or pain points found); training her classifier ..."
        )
        try:
            model = sensitivity_model_train(
                collection=collection, persona=persona, source="reference"
            )
        except ClassifierError as exc:
            self.stderr.write(f"  no classifier ({exc}): every result waits for review")
            return
        inputs = review_services.band_inputs(publication=publication)
        rule = review_services.band_suggested(inputs=inputs)
        review_services.publication_band_set(
            publication=publication,
            user=lead,
            low=rule.low,
            high=rule.high,
            published=True,
            why="day one: the publish page's rule (review.services.BAND_RULE)",
        )
        p = rule.preview
        self.say(
            f"  version {model.version}, F1 {model.report['f1']:.2f}; band [{rule.low:g}, "
            f"{rule.high:g}): {p.visible} visible ({p.expected_sensitive:.1f} expected "
            f"sensitive, {p.expected_low:.0f} to {p.expected_high:.0f}), {p.review} to review "
            f"({p.review_hours:.1f} h), {p.withheld} withheld"
        )

    def create_project(self, collection, annotators):
        """A training round on one topic, then a production round over all ten topics."""
        topics = collection.topics.order_by("number")
        project = projects.project_create(
            name="Demo judging",
            collection=collection,
            personas=Persona.objects.filter(name=PERSONA),
            topics=topics,
            annotators=annotators,
            overlap=1,
            double_percent=20,
            guidelines=(DEMO_DIR / "guidelines.md").read_text(),
            round_kind=Round.Kind.TRAINING,
        )
        training = project.rounds.get(number=1)
        n = projects.project_tasks_from_search(
            project=project, round_=training, k=5, topics=topics[:1]
        )
        production = projects.round_open(project=project, kind=Round.Kind.PRODUCTION)
        n += projects.project_tasks_from_search(project=project, round_=production, k=15)
        # Training tasks are judged by every annotator and some production tasks by two:
        # say how many judgments that makes, the number the judging page counts.
        needed = sum(project.tasks.values_list("required", flat=True))
        self.say(f"Annotation project {project.name!r}: {n} tasks, {needed} judgments needed")
        self.create_learning_project(collection, annotators, topics)

    def create_learning_project(self, collection, annotators, topics):
        """Active learning on one topic: RDS down BM25 (title), then CAL retrained per document."""
        from ranking.learning_plans import learning_plan_create

        topic = topics.get(number="403")
        project = projects.project_create(
            name="Demo active learning",
            collection=collection,
            personas=Persona.objects.filter(name=PERSONA),
            topics=[topic],
            annotators=annotators,
            guidelines=(DEMO_DIR / "guidelines.md").read_text(),
        )
        learning_plan_create(
            project=project,
            topic=topic,
            budget=80,
            seed_mode="rds",
            candidates="collection",
        )
        self.say(
            f"Active-learning project {project.name!r}: topic {topic.number}, the worker "
            "walks down BM25 for seeds, then CAL retrains after every judged document"
        )

    def load_corpus(self):
        collection, _ = Collection.objects.get_or_create(
            slug=SLUG,
            defaults={
                "name": "SpamAssassin ham",
                "description": "The legitimate (ham) messages of the SpamAssassin public "
                "corpus: mailing lists and personal mail from 2002 (PDDL-1.0 / CC0-1.0).",
            },
        )
        try:
            root = corpus.fetch(Path(settings.VAR_DIR) / "cache", say=self.say)
            folders = [root / f for f in corpus.HAM_FOLDERS]
        except corpus.CorpusUnavailable as exc:
            self.stderr.write(f"{exc}.\nLoading the small sample shipped in {SAMPLE_DIR} instead.")
            folders = [SAMPLE_DIR]
        for folder in folders:
            total = services.count_files(folder)
            with tqdm(
                total=total, desc=f"Importing {folder.name}", unit="msg", mininterval=0.5
            ) as bar:
                _job, report = services.import_recorded(
                    collection=collection,
                    fmt="emails",
                    path=folder,
                    progress=lambda n, bar=bar: bar.update(min(n, bar.total) - bar.n),
                )
                bar.update(bar.total - bar.n)
            self.say(f"  {report.summary()}")

    def serve(self, port):
        wanted, port = port, _free_port(port)
        if port != wanted:
            self.say(f"Port {wanted} is in use (another server?): using {port} instead.")
        url = f"http://127.0.0.1:{port}/"
        log_dir = Path(settings.VAR_DIR) / "log"
        self.say(f"Starting the web server and the workers (full logs in {log_dir}/) ...")
        started = time.perf_counter()
        with Supervisor(log_dir, console=self.say) as supervisor:
            try:
                for name, args in demo_processes(port):
                    supervisor.start(name, args, env=demo_env(), cwd=settings.BASE_DIR)
                self.wait_until_up(supervisor, url)
                self.say("")
                self.say(
                    f"sasc is running at {url} (started in {time.perf_counter() - started:.1f} s)"
                )
                self.say(f"Demo logins (password for all: {PASSWORD}):")
                for username, role in USERS:
                    self.say(f"  {username:<11} {role}")
                self.say(
                    "Worker and web server warnings and errors appear here, prefixed "
                    "[worker] (interactive queue), [bulk-worker] or [web]. Press Ctrl-C to "
                    "stop them all."
                )
                child = supervisor.watch()
                self.report_exit(child)
                raise SystemExit(1)
            except (Stop, KeyboardInterrupt) as stop:
                self.say(f"\nStopping ({stop or 'Ctrl-C'}) ...")
        # the supervisor's exit stopped every process group it started
        self.say("Stopped: the web server, the workers and their processes.")

    def wait_until_up(self, supervisor, url):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(url + "health/", timeout=2)  # noqa: S310 (loopback)
                return
            except OSError:
                child = supervisor.exited()
                if child is not None:
                    self.report_exit(child)
                    raise SystemExit(1) from None
                time.sleep(0.3)
        raise SystemExit(f"the web server did not answer {url}health/ within 120 s")

    def report_exit(self, child):
        self.stderr.write(
            f"The {child.name} process stopped (exit code {child.proc.returncode}); its last "
            f"lines ({child.log_path}):"
        )
        for line in child.tail:
            self.stderr.write(f"  [{child.name}] {line}")


def demo_env() -> dict:
    return {**os.environ, "SASC_WARM_LUCENE": "1", "PYTHONUNBUFFERED": "1"}


def demo_processes(port: int) -> list[tuple[str, list[str]]]:
    """The demo's processes: one gunicorn web server and two Celery workers, one for the
    ``interactive`` queue (searchers' review requests, active-learning batches, exposure
    cards) and one for ``bulk`` (imports, index builds, training), so that an import never
    holds up a searcher and a burst of searches never holds up an import."""
    bin_dir = Path(sys.executable).parent
    web = [
        str(bin_dir / "gunicorn"),
        "config.wsgi",
        "-c",
        "config/gunicorn.py",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--threads",
        "8",
    ]
    # INFO goes to var/log/worker.log and bulk-worker.log (each task received and finished);
    # the supervisor copies WARNING and above, tracebacks included, to the console.
    quiet = ["--without-heartbeat", "--without-gossip", "--without-mingle"]

    def worker(queue: str) -> list[str]:
        # -n: each worker its own node name, so the two do not take each other for a clash
        return worker_command(bin_dir, "--quiet", queues=(queue,)) + [*quiet, "-n", f"{queue}@%h"]

    return [
        ("web", web),
        ("worker", worker("interactive")),
        ("bulk-worker", worker("bulk")),
    ]


# Day one's stand-in for an archivist's labels (the demo has none at setup): a seeded random
# sample of the collection's messages, sensitive when the recognisers found a kind of personal
# data the persona worries about or the message names one of her pain points (docs/demo
# personas.json: passwords and server security, salary and contracts, illness, family and
# relationship). A surrogate, like the category codes of the SIGIR 2019 study: the classifier
# learns it easily, and the demo's lead should label for real before publishing widely.
STAND_IN_KINDS = ("health", "financial", "card", "iban", "account", "national_id", "dob")
STAND_IN_TERMS = re.compile(
    r"\b(password|passwd|salary|salaries|contract|invoice|hospital|illness|sick|cancer|doctor"
    r"|confidential|private|security hole|vulnerab\w*|exploit\w*|root access|credit card|bank"
    r"|payment|lawyer|divorce|girlfriend|boyfriend|wife|husband)\b",
    re.IGNORECASE,
)
STAND_IN_SAMPLE = 400


def stand_in_labels(*, collection, persona) -> dict[int, int]:
    """Write the stand-in labels as the persona's imported sensitivity labels (source
    ``demo-stand-in``), through the import a lead uses, and return them."""
    import random

    from annotate.import_labels import sensitivity_import
    from annotate.models import DocumentEntity

    ids = sorted(collection.documents.values_list("pk", "docid"))
    sample = dict(random.Random(0).sample(ids, min(STAND_IN_SAMPLE, len(ids))))
    flagged = set(
        DocumentEntity.objects.filter(
            document_id__in=sample, persona__isnull=True, kind__in=STAND_IN_KINDS
        ).values_list("document_id", flat=True)
    )
    for pk, subject, body in collection.documents.filter(pk__in=sample).values_list(
        "pk", "subject", "body"
    ):
        if STAND_IN_TERMS.search(f"{subject}\n{body}"):
            flagged.add(pk)
    labels = {pk: int(pk in flagged) for pk in sample}
    path = Path(settings.VAR_DIR) / "demo-stand-in-labels.txt"
    path.write_text("".join(f"* 0 {docid} {labels[pk]}\n" for pk, docid in sample.items()))
    sensitivity_import(collection=collection, persona=persona, path=path, source="demo-stand-in")
    return labels
