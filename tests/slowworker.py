"""A Celery worker whose retrains are held open, for the tests that kill a worker mid-retrain
(T4, docs/reliability.md).

``python -m tests.slowworker <milliseconds> <celery's arguments>`` (started by
``tests.workerkit.Worker`` given ``hold_training_ms``) sets Django up, wraps
``ranking.learning_step.scores_save`` so that it waits that long first, then runs Celery's
command line. ``scores_save`` is called once a version is trained and before it is
recorded, so a kill during the wait lands between the two. The pool's process is forked
from this one and keeps the wrapper; the production code carries no fault switch.
"""

import logging
import os
import sys
import time

HOLDING = "slowworker: holding a trained version"


def hold_training(milliseconds: int) -> None:
    """Make every retrain of this process wait ``milliseconds`` between training and
    recording its version, saying so in the log (``HOLDING``, which the kill tests wait for:
    without the hold they time out). An ``AttributeError`` if ``scores_save`` moved."""
    from ranking import learning_step

    save = learning_step.scores_save

    def held(**kwargs):
        logging.getLogger(__name__).warning("%s for %s ms", HOLDING, milliseconds)
        time.sleep(milliseconds / 1000)
        return save(**kwargs)

    learning_step.scores_save = held


def main(argv: list[str]) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    hold_training(int(argv[0]))
    from celery.__main__ import main as celery

    sys.argv = ["celery", *argv[1:]]
    sys.exit(celery())


if __name__ == "__main__":
    main(sys.argv[1:])
