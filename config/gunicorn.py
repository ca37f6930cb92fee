"""Gunicorn settings shared by the demo and deployments (override on the command line)."""

import threading

from config.env import env_bool, env_int, env_str

worker_class = "gthread"
threads = env_int("GUNICORN_THREADS", 4, minimum=1)
workers = env_int("GUNICORN_WORKERS", 2, minimum=1)
timeout = 60
# Idle keep-alive connections stay open 75 s (gunicorn's default is 2 s). A client, or a
# reverse proxy, that reuses an idle connection just as the server closes it gets a
# connection reset: CI's claim storm (T1) lost a request that way once, when 40 annotators
# came back after a pause on a loaded machine. The server must hold idle connections
# longer than anything in front of it (nginx's upstream keepalive_timeout is 60 s); gthread
# parks them in its poller, not in a thread.
keepalive = env_int("GUNICORN_KEEPALIVE", 75, minimum=0)
accesslog = env_str("GUNICORN_ACCESS_LOG") or None
# Read here, in the master, so that a bad value stops the server before it forks.
WARM_LUCENE = env_bool("SASC_WARM_LUCENE")


def post_worker_init(worker):
    """Load Lucene in the background after the fork, so the first search does not wait."""
    if WARM_LUCENE:
        from core import lucene

        threading.Thread(target=lucene.warm, name="lucene-warmup", daemon=True).start()
