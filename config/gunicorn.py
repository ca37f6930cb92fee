"""Gunicorn settings shared by the demo and deployments (override on the command line)."""

import os
import threading

worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", 4))
workers = int(os.environ.get("GUNICORN_WORKERS", 2))
timeout = 60
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None


def post_worker_init(worker):
    """Load Lucene in the background after the fork, so the first search does not wait."""
    if os.environ.get("SASC_WARM_LUCENE") == "1":
        from ranking import lucene

        threading.Thread(target=lucene.warm, name="lucene-warmup", daemon=True).start()
