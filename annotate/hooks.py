"""The up-calls: where annotate reaches an app above it, by name.

Packages import downwards only (core < annotate < ranking < review < config;
docs/architecture.md). A few things annotate does need a reaction that lives above it: a
judgment of an actively chosen task must reach the learner (ranking), an empty queue may be
topped up by it, a search-based pool needs a ranking, and every edit, import and export is
written to the audit log that review keeps. Each is a named hook below; annotate calls it
where the event happens, and the app that owns the reaction connects one function to it
when Django starts (its ``AppConfig.ready``: ``ranking/apps.py``, ``review/apps.py``). To
follow a hook, look for its name in those two files.

A hook holds one function, not a list: every event has one owner, and connecting a second,
different function is refused at start-up rather than silently replacing the first.
"""

from collections.abc import Callable
from typing import Any


class SearchUnavailable(RuntimeError):
    """No ranking can be had now (the collection has no built index yet); the message says
    what to do."""


class Hook:
    """One named up-call. ``required`` hooks raise when called with nothing connected (an
    event that must not be lost, such as an audit row); the others answer ``default``."""

    def __init__(self, name: str, *, required: bool = False, default: Any = None):
        self.name = name
        self.required = required
        self.default = default
        self.function: Callable | None = None

    def connect(self, function: Callable) -> None:
        """Connect the function that reacts (once, at start-up; connecting it again is
        harmless)."""
        if self.function is not None and self.function is not function:
            raise RuntimeError(
                f"hook {self.name} is already connected to {self.connected_to}; "
                "a hook has one owner"
            )
        self.function = function

    @property
    def connected_to(self) -> str | None:
        """The connected function's dotted name, for a reader and for the tests."""
        f = self.function
        return None if f is None else f"{f.__module__}.{f.__qualname__}"

    def __call__(self, **kwargs):
        if self.function is None:
            if self.required:
                raise RuntimeError(
                    f"hook {self.name} has nothing connected: its app must be in INSTALLED_APPS"
                )
            return self.default
        return self.function(**kwargs)

    def __repr__(self) -> str:
        return f"<Hook {self.name} -> {self.connected_to}>"


# Append one row to the audit log (G9), inside the transaction of what it records:
# ``audit_record(user=, action=, collection=None, document=None, **detail)`` with JSON
# values in ``detail``. Review connects ``review.audit.audit``. Required: an edit,
# adjudication, import or export is never left unlogged.
audit_record = Hook("audit_record", required=True)

# A judgment of a task that active learning or a seed walk chose was stored:
# ``(project_id=, topic_id=, judgment_id=)``, called inside the judgment's transaction. Ranking
# connects ``ranking.learning_plans.learning_judged`` (it queues the topic's next learning step
# after the commit; a step that finds the judgment already in a model does not retrain).
learning_task_judged = Hook("learning_task_judged")

# An annotator's queue is empty: ``(project=) -> bool``, true when tasks were added.
# Ranking connects ``ranking.learning_queue.queue_top_up`` (the previous model's next picks when
# a retrain is late).
queue_empty = Hook("queue_empty", default=False)

# Why a task chosen by active learning takes no more judgments: ``(task=) -> str | None``,
# a sentence, or None when the learner still wants it. Ranking connects
# ``ranking.selectors.learning_task_closed``.
learning_task_closed = Hook("learning_task_closed")

# The project's learning plans for the judging page's idle notice:
# ``(project=) -> [{"topic", "status", "message"}]``. Ranking connects
# ``ranking.selectors.learning_plans_summary``.
learning_plans = Hook("learning_plans", default=[])

# Machine labels of a project (hybrid qrels): ``(project=) -> [(topic number, docid,
# relevant, probability, model version)]``. Ranking connects
# ``ranking.selectors.machine_labels_list``.
machine_labels = Hook("machine_labels", default=[])

# New documents were imported into a collection: ``(collection=, user=)``, after the
# import's commit. Ranking connects ``ranking.services.job_index_create`` (the index is
# built again so search and pooling see them).
documents_imported = Hook("documents_imported")

# The first ``k`` documents of the collection for a query, best first:
# ``(collection=, query=, k=) -> [Document]``; raises ``SearchUnavailable`` when no index
# is built. Ranking connects ``ranking.services.collection_top_documents``.
ranked_documents = Hook("ranked_documents", required=True)

ALL = [
    audit_record,
    learning_task_judged,
    queue_empty,
    learning_task_closed,
    learning_plans,
    machine_labels,
    documents_imported,
    ranked_documents,
]
