"""Set up the demo (corpus, personas, topics, index, users) and run web and worker."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from annotate import projects, roles, services
from annotate.models import AnnotationProject, Collection, Persona, Round
from config.demo import corpus
from config.env import env_int
from ranking import services as ranking_services

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
SAMPLE_DIR = Path(settings.BASE_DIR) / "tests" / "fixtures" / "emails" / "sample"
SLUG = "spamassassin-ham"
USERS = [
    ("lead", roles.LEAD),
    ("annotator1", roles.ANNOTATOR),
    ("annotator2", roles.ANNOTATOR),
    ("archivist", roles.ARCHIVIST),
    ("searcher", roles.SEARCHER),
]
PASSWORD = "sasc-demo"  # noqa: S105 (the printed demo credential, local only)


def _free_port(preferred: int) -> int:
    for port in range(preferred, preferred + 50):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port found")


class Command(BaseCommand):
    help = "Prepare the demo collection and users, then run the web server and a Celery worker."

    def add_arguments(self, parser):
        parser.add_argument("--setup-only", action="store_true", help="prepare, do not serve")
        parser.add_argument("--port", type=int, default=env_int("SASC_PORT", 8000, minimum=1))

    def handle(self, *args, **opts):
        self.setup()
        if not opts["setup_only"]:
            self.serve(opts["port"])

    def say(self, text):
        self.stdout.write(text)
        self.stdout.flush()

    def setup(self):
        call_command("migrate", verbosity=0)
        call_command("collectstatic", verbosity=0, interactive=False)
        services.roles_ensure()
        collection = Collection.objects.filter(slug=SLUG).first()
        if collection is None or not collection.documents.exists():
            self.load_corpus()
            collection = Collection.objects.get(slug=SLUG)
        else:
            self.say(f"Demo collection present: {collection.documents.count()} messages")
        if not Persona.objects.exists():
            services.import_recorded(
                collection=None, fmt="personas", path=DEMO_DIR / "personas.json"
            )
        _job, report = services.import_recorded(
            collection=collection, fmt="topics-trec", path=DEMO_DIR / "topics.txt"
        )
        self.say(f"Topics: {report.summary()}")
        if not collection.index_is_current:
            self.say("Building the Lucene index and TF-IDF features (about 20 s)...")
            result = ranking_services.index_recorded(collection=collection)
            self.say(f"Indexed {result['documents']} messages")
            collection.refresh_from_db()
        users = {
            username: services.user_create(username=username, password=PASSWORD, role_names=[role])
            for username, role in USERS
        }
        if not AnnotationProject.objects.filter(collection=collection).exists():
            self.create_project(collection, [users["annotator1"], users["annotator2"]])
        self.publish(collection)

    def publish(self, collection):
        """Open the collection to the demo searcher, protected for the demo persona. Until
        a classifier is trained every result waits for the archivist's review."""
        from review.models import Publication

        persona = Persona.objects.filter(name="Maeve Gallagher").first()
        if persona is not None:
            Publication.objects.get_or_create(
                collection=collection, defaults={"persona": persona, "published": True}
            )

    def create_project(self, collection, annotators):
        """A training round on one topic, then a production round over all ten topics."""
        topics = collection.topics.order_by("number")
        project = projects.project_create(
            name="Demo judging",
            collection=collection,
            personas=Persona.objects.filter(name="Maeve Gallagher"),
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
        """Active learning on one topic: RDS down BM25 (title), then CAL in batches of 10."""
        from ranking.learning import learning_plan_create

        topic = topics.get(number="403")
        project = projects.project_create(
            name="Demo active learning",
            collection=collection,
            personas=Persona.objects.filter(name="Maeve Gallagher"),
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
            batch_size=10,
        )
        self.say(
            f"Active-learning project {project.name!r}: topic {topic.number}, the worker "
            "walks down BM25 for seeds, then CAL queues batches of 10"
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
            root = corpus.fetch(Path(settings.VAR_DIR) / "cache")
            folders = [root / f for f in corpus.HAM_FOLDERS]
        except corpus.CorpusUnavailable as exc:
            self.stderr.write(f"{exc}.\nLoading the small sample shipped in {SAMPLE_DIR} instead.")
            folders = [SAMPLE_DIR]
        for folder in folders:
            self.say(f"Importing {folder.name} ...")
            _job, report = services.import_recorded(
                collection=collection, fmt="emails", path=folder
            )
            self.say(f"  {report.summary()}")

    def serve(self, port):
        port = _free_port(port)
        url = f"http://127.0.0.1:{port}/"
        env = {**os.environ, "SASC_WARM_LUCENE": "1"}
        bin_dir = Path(sys.executable).parent
        web = subprocess.Popen(
            [
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
            ],
            env=env,
            cwd=settings.BASE_DIR,
        )
        worker = subprocess.Popen(
            [
                str(bin_dir / "celery"),
                "--quiet",
                "-A",
                "config",
                "worker",
                "-Q",
                "default,ranking",
                "--concurrency",
                "1",
                "--loglevel",
                "WARNING",
            ],
            env=env,
            cwd=settings.BASE_DIR,
        )
        procs = [web, worker]

        def stop(signum, frame):
            raise KeyboardInterrupt

        # A plain `kill` stops the demo as cleanly as Ctrl-C: no orphaned web or worker.
        signal.signal(signal.SIGTERM, stop)
        try:
            for _ in range(120):
                try:
                    urllib.request.urlopen(url + "health/", timeout=2)  # noqa: S310 (loopback)
                    break
                except OSError:
                    if web.poll() is not None:
                        raise SystemExit("the web server did not start") from None
                    time.sleep(0.5)
            self.say("")
            self.say(f"sasc is running at {url}")
            self.say(f"Demo logins (password for all: {PASSWORD}):")
            for username, role in USERS:
                self.say(f"  {username:<11} {role}")
            self.say("Press Ctrl-C to stop web server and worker.")
            while all(p.poll() is None for p in procs):
                time.sleep(1)
            raise SystemExit("a process stopped unexpectedly")
        except KeyboardInterrupt:
            self.say("\nStopping...")
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
