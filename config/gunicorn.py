"""Gunicorn settings shared by the demo and deployments (override on the command line)."""

import os
import threading

worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", 4))
workers = int(os.environ.get("GUNICORN_WORKERS", 2))
timeout = 60
# Idle keep-alive connections stay open 75 s (gunicorn's default is 2 s). A client, or a
# reverse proxy, that reuses an idle connection just as the server closes it gets a
# connection reset: CI's claim storm (T1) lost a request that way once, when 40 annotators
# came back after a pause on a loaded machine. The server must hold idle connections
# longer than anything in front of it (nginx's upstream keepalive_timeout is 60 s); gthread
# parks them in its poller, not in a thread.
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", 75))
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None


def post_worker_init(worker):
    """Load Lucene in the background after the fork, so the first search does not wait."""
    if os.environ.get("SASC_WARM_LUCENE") == "1":
        from ranking import lucene

        threading.Thread(target=lucene.warm, name="lucene-warmup", daemon=True).start()
