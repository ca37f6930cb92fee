"""The active-learning step the worker runs: ``learning_step`` brings a plan up to date and
is safe to run any number of times, from any number of workers.

Django glue around the pure core in ``core.active`` (docs/domain.md §4):

- seeding (``ranking.seeding``): IS waits for the topic's seed marks; RDS walks down one
  system's ranking until enough relevant and non-relevant documents are judged;
- learning: when ``retrain_every`` documents were judged since the latest model (or there is
  none), train a new version outside any transaction, then, under the plan's row lock,
  record it (one version per judgment high-water mark: a task run twice makes one version)
  and top the queue up to the batch being judged plus one batch ahead, within the budget
  (``ranking.learning_queue``);
- then the unjudged candidates get machine labels from the new version;
- and the arrays of versions older than the latest ``KEEP_VERSIONS`` are deleted
  (``scores_prune``): every reader takes the latest version, and retrained after every
  judged document a plan over 500,000 messages would otherwise keep 6 MB per judgment.
"""

import logging
import re
import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotate.models import Answer, Judgment
from core import active
from ranking.learning_plans import learning_nudge
from ranking.learning_queue import plan_top_up
from ranking.learning_state import (
    PlanState,
    Rows,
    batch_size,
    document_rows,
    documents_of_rows,
    plan_rows,
    plan_state,
    scores_beside,
    scores_usable,
)
from ranking.models import LearningModel, LearningPlan
from ranking.seeding import seed_step

logger = logging.getLogger(__name__)


def learning_step(*, plan_id: int, judgment_id: int | None = None) -> dict:
    """Bring a plan up to date (see the module docstring); return what was done.

    Everything slow (Lucene and its JVM, reading the matrix, training) runs before the
    plan's lock is taken; under the lock only the plan's rows are read and its tasks
    written. On SQLite that lock is the database's write lock, which web requests wait for.

    ``judgment_id``: the judgment whose commit asked for this step. When the latest model
    already saw it (a step that started later trained on it), this step does not retrain,
    only tops the queue up: when judgments come faster than retrains, the steps queued
    behind a retrain cost a query each instead of a retrain each, so retrains keep pace
    (each one trains on everything judged by then) and the worker's queue does not grow.
    """
    plan = LearningPlan.objects.select_related("project__collection", "topic", "round").get(
        pk=plan_id
    )
    started = time.perf_counter()
    if plan.status not in (LearningPlan.Status.SEEDING, LearningPlan.Status.LEARNING):
        return {"status": plan.status}
    state = plan_state(plan)
    if plan.status == LearningPlan.Status.SEEDING:
        seeded = seed_step(plan, state)
        if seeded["status"] != LearningPlan.Status.LEARNING:
            return seeded
        plan.status = LearningPlan.Status.LEARNING  # seeds are enough: learn at once
    latest = plan.models.order_by("-version").first()
    report: dict = {"status": plan.status}
    trained = None
    rows = plan_rows(plan)
    size = batch_size(plan, len(rows.candidates), state)
    usable = scores_usable(latest, rows)
    # The version a plan ends with sees every judgment (its machine labels are final): once
    # the budget is spent or the round closed, any judgment no model saw makes a retrain
    # due, coalesced or not.
    unseen = state.judged_since(latest)  # late judgments included
    unseen_at_end = _last_step(plan, state) and unseen > 0
    due = (
        unseen >= (plan.retrain_every or size) or (not state.queued and unseen > 0) or unseen_at_end
    )
    seen = (
        latest is not None
        and judgment_id is not None
        and judgment_id <= latest.judgment_mark
        and not state.late_judgments(latest)  # a lower id committed after the model read
    )
    if seen and usable and not unseen_at_end:
        due = False  # coalesced: a later step's model has this judgment
        report["coalesced"] = True
    attempted = latest is None or due or not usable  # a new index version needs its own scores
    if attempted:
        trained = _train(plan, state, rows)
    with transaction.atomic():
        plan = LearningPlan.objects.select_for_update().select_related("round").get(pk=plan_id)
        if plan.status != LearningPlan.Status.LEARNING:
            return {"status": plan.status}
        if trained:
            model, created = _record(plan, trained)
        else:
            model, created = (latest if usable else None), False
        state = plan_state(plan)  # judgments may have arrived while training
        size = batch_size(plan, len(rows.candidates), state)
        report["model"] = model.version if model else None
        report["added"], report["picked_by"] = plan_top_up(plan, state, model, rows, size)
        ended = _ended(plan, state, report["added"], rows)
        late = model is not None and state.judged_since(model) > 0
        if ended and (trained or not attempted) and _last_step(plan, state) and late:
            # The plan ends with judgments this step's model has not seen (they came while
            # it trained, or it was coalesced): a whole step (no judgment id) trains on
            # them, then ends the plan. (Not after a failed training: no loop.)
            learning_nudge(plan_id=plan.pk)
            ended = ""
        if ended:
            plan.status, plan.status_message = LearningPlan.Status.FINISHED, ended
            plan.save(update_fields=["status", "status_message"])
    report["seconds_to_queue"] = time.perf_counter() - started
    if (created or ended) and _labels_due(plan, model, final=bool(ended)):
        report["machine_labels"] = machine_labels_write(
            plan=plan, model=model, rows=rows, state=state
        )
    if created:
        report["pruned"] = scores_prune(plan)
    report["seconds"] = time.perf_counter() - started
    return report


def _last_step(plan: LearningPlan, state: PlanState) -> bool:
    """Whether the plan ends with this step whatever it queues: the budget is spent or its
    round was closed (then a retrain is due for any judgment no model saw)."""
    return state.reviewed >= plan.budget or not plan.round.is_open


def _ended(plan: LearningPlan, state: PlanState, added: int, rows: Rows) -> str:
    """Why the plan is over (caller holds its lock, after topping up), or "" if it is not:
    the budget is spent, its round was closed, or nothing is queued and nothing more could
    be (every candidate judged, or no persona to judge for). A plan that can add no task
    ends saying so rather than showing "Learning" with nothing to judge."""
    if state.reviewed >= plan.budget:
        return f"Budget spent: {state.reviewed} documents judged (budget {plan.budget})" + (
            f"; {state.check_judged} check-sample judgments on top" if state.check_judged else ""
        )
    if not plan.round.is_open:
        return (
            f"Stopped: round {plan.round.number} was closed, so no task can be added "
            f"({_judged_words(plan, state)})"
        )
    if state.queued or added:
        return ""
    if not plan.project.personas.exists():
        return (
            f"Stopped: the project has no persona to add tasks for ({_judged_words(plan, state)})"
        )
    return (
        f"Finished: every one of the {len(rows.candidates)} candidates was judged or could "
        f"not be queued ({_judged_words(plan, state)}; the budget not reached)"
    )


def _judged_words(plan: LearningPlan, state: PlanState) -> str:
    """The plan's judgments in words: the review's against its budget, the check sample's
    apart (they are never counted against the budget)."""
    words = f"{state.reviewed} of the budget of {plan.budget} judged by the review"
    if state.check_judged:
        words += f", {state.check_judged} check-sample judgments on top"
    return words


def learning_step_failed(*, plan_id: int, error: BaseException) -> None:
    """Show on the plan that its last step failed, and why (the plan stays as it was: the
    next judgment, or the worker's next start, runs the step again)."""
    message = (
        f"The last update failed ({type(error).__name__}: {error}); "
        "it runs again with the next judgment"
    )
    LearningPlan.objects.filter(
        pk=plan_id, status__in=[LearningPlan.Status.SEEDING, LearningPlan.Status.LEARNING]
    ).update(status_message=message[:1000])


def _train(plan: LearningPlan, state: PlanState, rows: Rows) -> dict | None:
    """Train a new version's model and scores on ``rows``' index version, outside any
    transaction (the slow part)."""
    matrix, row_of, candidates = rows.matrix, rows.row_of, rows.candidates
    started = time.perf_counter()
    training = state.training  # never the check sample: the review must not learn it
    doc_rows = document_rows(plan, row_of, training)
    judged = sorted(doc_rows)
    rows_judged = [doc_rows[d] for d in judged]
    labels = active.collapse([training[d] for d in judged])
    version = (plan.models.order_by("-version").values_list("version", flat=True).first() or 0) + 1
    logger.info(
        "plan %s: training version %s on %s judged documents (index version %s)",
        plan.pk,
        version,
        len(rows_judged),
        rows.index_version,
    )
    seed = plan.random_seed + version
    # Screening (CAL in growing batches, AutoTAR): the picker learns from presumed
    # non-relevant documents too, at the C measured for screening (docs/active-learning.md).
    # Retrained after every judged document (singles None), it is the mean rank of that
    # logistic regression (C = 3) and ASReview's SVM ("Third round"), both reading the
    # collection's latent topics beside the words ("Eighth round").
    screening = plan.growing and plan.strategy == LearningPlan.Strategy.CAL
    ensemble = screening and plan.singles is None
    # An index built before the latent topics has none: the picker reads the words alone.
    latent = None
    if ensemble and matrix.latent is not None and matrix.latent.shape[1]:
        latent = active.Latent(matrix.latent)
    if ensemble:
        selector_c = active.ENSEMBLE_C
    else:
        selector_c = active.SCREENING_C if screening else active.DEFAULT_C
    try:
        # Two classifiers: the one that picks (judged documents alone, as in Rahman et al.,
        # or as AutoTAR when screening) and the one that labels the rest (plus presumed
        # non-relevant documents).
        p = None
        if ensemble:
            model, p = active.train_screening(
                matrix.matrix,
                rows_judged,
                labels,
                candidates,
                seed=seed,
                c=selector_c,
                latent=latent,
            )
        elif screening:
            model = active.train_labeller(
                matrix.matrix, rows_judged, labels, candidates, seed=seed, c=selector_c
            )
        else:
            model = active.train(matrix.matrix, rows_judged, labels, seed=seed)
        labeller = active.train_labeller(matrix.matrix, rows_judged, labels, candidates, seed=seed)
    except active.NotTrainable as exc:
        logger.info("plan %s: %s", plan.pk, exc)
        return None
    if p is None:
        p = model.probabilities(matrix.matrix)
    arrays = {"labels": labeller.probabilities(matrix.matrix)}
    if plan.strategy == LearningPlan.Strategy.SENSITIVITY:
        p_sensitive = _sensitivity_scores(plan, matrix, row_of)
        if p_sensitive is not None:
            arrays["sensitivity"] = p_sensitive
    # Named by what it was trained on, as the version record is unique on it: two workers
    # racing on other judgments cannot write into each other's files.
    marks = f"j{state.judgment_mark}-n{len(state.judgment_ids)}-s{state.seed_mark}"
    path = _scores_dir(plan) / f"{marks}-i{rows.index_version}.npy"
    scores_save(path=path, scores=p, others=arrays)
    candidate_set = set(candidates.tolist())
    in_pool = {
        int(r): int(lbl) for r, lbl in zip(rows_judged, labels, strict=True) if r in candidate_set
    }
    return {
        "version": version,
        "judgment_mark": state.judgment_mark,
        "judgment_count": len(state.judgment_ids),
        "seed_mark": state.seed_mark,
        "judged": len(rows_judged),
        "positives": model.positives,
        "negatives": len(rows_judged) - int(labels.sum()),
        "scores_path": str(path),
        "index_version": rows.index_version,
        "prevalence": active.estimated_prevalence(arrays["labels"], candidates, in_pool),
        "seconds": time.perf_counter() - started,
        "params": {
            "classifier": "logistic regression (liblinear)",
            "C": active.DEFAULT_C,
            "selector_C": selector_c,
            "selector_presumed": screening,
            "selector": (
                "mean rank of logistic regression and ELAS u4's SVM"
                + (
                    f", words + {latent.coordinates.shape[1]} latent topics "
                    f"(weight {latent.weight})"
                    if latent is not None
                    else ""
                )
                if ensemble
                else "logistic regression"
            ),
            "presumed_nonrelevant": labeller.negatives - (len(labels) - int(labels.sum())),
            "random_seed": seed,
            "strategy": plan.strategy,
            "features": f"TF-IDF of collection version {rows.index_version}"
            + (f" + {latent.coordinates.shape[1]} latent topics" if latent is not None else ""),
            "terms": len(matrix.vocabulary),
            "candidates": int(len(candidates)),
        },
    }


def _scores_dir(plan: LearningPlan) -> Path:
    return Path(settings.SASC_INDEX_DIR) / "learning" / str(plan.pk)


def scores_save(*, path: Path, scores: np.ndarray, others: dict[str, np.ndarray]) -> None:
    """Write a trained version's arrays: each of ``others`` beside ``path``
    (``scores_beside``), then the selection ``scores`` at ``path``, each through a temporary
    file renamed into place. The version is trained but not recorded yet: a worker killed
    here loses the retrain, which the next step runs again (the fault tests hold a retrain
    open at this point, ``tests/slowworker.py``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # What orders a pick keeps float64 (the selection scores: CAL takes the highest, ties by
    # row; P(sensitive): the sensitivity strategy takes the nearest 0.5): float32 made
    # candidates the picker told apart equal (1 of 90 simulated screenings moved by 5
    # documents, docs/active-learning.md). The machine labels' P(relevant), thresholded at
    # 0.5 and shown, keeps float32.
    for array, target, dtype in (
        *(
            (a, scores_beside(path, kind), np.float32 if kind == "labels" else np.float64)
            for kind, a in others.items()
        ),
        (scores, path, np.float64),
    ):
        tmp = target.with_suffix(".tmp.npy")
        np.save(tmp, np.asarray(array).astype(dtype))
        tmp.replace(target)


# Versions whose arrays stay on disk: the latest, and two for a reader (the queue's top-up,
# the stopping page's projection, the machine labels) that read a version's row just before
# newer ones were recorded. Every reader takes the latest version.
KEEP_VERSIONS = 3
# Arrays no recorded version names: a training whose version was never recorded (its worker
# died between writing and recording) or one still about to record. Deleted once this old.
UNRECORDED_SECONDS = 3600.0
# The version's name (``-n`` missing in names made before judgment counts were recorded),
# then the kind of a beside array, then a temporary file's suffix.
_OWNER = re.compile(r"(j\d+(?:-n\d+)?-s\d+-i\d+)(?:-[a-z]+)?(?:\.tmp)?\.npy")


def scores_prune(plan: LearningPlan, *, now: float | None = None) -> int:
    """Delete the arrays of the plan's versions older than the latest ``KEEP_VERSIONS``, and
    arrays of no recorded version once ``UNRECORDED_SECONDS`` old; return how many files were
    deleted. The versions' rows stay (their parameters and counts); only the arrays, which
    no reader of an older version needs, go."""
    folder = _scores_dir(plan)
    try:
        # Each array file with the version that owns it.
        files = {f: m.group(1) for f in folder.iterdir() if (m := _OWNER.fullmatch(f.name))}
    except FileNotFoundError:
        return 0
    latest = list(
        plan.models.order_by("-version").values_list("version", "scores_path")[:KEEP_VERSIONS]
    )
    kept = {Path(p).stem for _v, p in latest}
    owners = set(files.values()) - kept
    if not owners:
        return 0
    # Only versions below the kept ones count as recorded: one another worker records while
    # this runs is newer, and its fresh files wait for UNRECORDED_SECONDS like any other.
    recorded = (
        {
            Path(p).stem
            for p in plan.models.filter(
                version__lt=min(v for v, _p in latest),
                scores_path__in=[str(folder / f"{o}.npy") for o in owners],
            ).values_list("scores_path", flat=True)
        }
        if latest
        else set()
    )
    now = time.time() if now is None else now
    deleted = 0
    for f, owner in files.items():
        if owner in kept:
            continue
        try:
            if owner in recorded or now - f.stat().st_mtime > UNRECORDED_SECONDS:
                f.unlink()
                deleted += 1
        except FileNotFoundError:  # another worker's prune got there first
            pass
    return deleted


def _record(plan: LearningPlan, trained: dict) -> tuple[LearningModel, bool]:
    """Store a trained version unless one with the same marks exists (caller holds the lock);
    return it and whether it is new."""
    same = plan.models.filter(
        judgment_mark=trained["judgment_mark"],
        judgment_count=trained["judgment_count"],
        seed_mark=trained["seed_mark"],
        index_version=trained["index_version"],
    ).first()
    if same is not None:
        return same, False
    latest = plan.models.order_by("-version").values_list("version", flat=True).first() or 0
    if trained["version"] != latest + 1:  # another worker stored a version meanwhile
        trained = {**trained, "version": latest + 1}
    return LearningModel.objects.create(plan=plan, trained_at=timezone.now(), **trained), True


def _sensitivity_scores(plan, matrix, row_of) -> np.ndarray | None:
    """P(sensitive for the plan's persona) of every row, from this topic's judgments."""
    answers = Judgment.objects.filter(
        task__project_id=plan.project_id,
        task__topic_id=plan.topic_id,
        task__persona_id=plan.sensitivity_persona_id,
        persona_sensitive__in=[Answer.YES, Answer.NO],
    ).values_list("task__document_id", "persona_sensitive")
    labels: dict[int, int] = {}
    for doc, answer in answers:
        labels[doc] = max(labels.get(doc, 0), int(answer == Answer.YES))
    doc_rows = document_rows(plan, row_of, labels)
    docs = sorted(doc_rows)
    try:
        model = active.train(
            matrix.matrix,
            [doc_rows[d] for d in docs],
            [labels[d] for d in docs],
            seed=plan.random_seed,
        )
    except active.NotTrainable:
        return None
    return model.probabilities(matrix.matrix)


def labels_due(version: int, last: int | None, *, final: bool = False) -> bool:
    """Whether model ``version`` should write the machine labels, the last written being
    ``last``'s. A write replaces the label of every unjudged candidate (hundreds of
    thousands at scale), and a plan retrained after every judged document makes a version
    per judgment: so every version up to the 19th, then every ``version // 10``-th (about
    ten writes per tenfold growth), and always the version a plan ends with."""
    if last is None or final:
        return last != version
    return version - last >= max(1, version // 10)


def _labels_due(plan: LearningPlan, model, *, final: bool) -> bool:
    from ranking.models import MachineLabel

    if model is None:
        return False
    last = (
        MachineLabel.objects.filter(project_id=plan.project_id, topic_id=plan.topic_id)
        .values_list("model_version", flat=True)
        .first()
    )
    return labels_due(model.version, last, final=final)


def machine_labels_write(
    *, plan: LearningPlan, model: LearningModel, rows, state: PlanState
) -> int:
    """Label every unjudged candidate with the model's P(relevant) (replacing older labels
    of the topic); return how many were written. ``rows`` is ``plan_rows(plan)`` and ``state``
    the plan's state, as the step has just read them; a model of another index version
    writes nothing."""
    from ranking.models import MachineLabel

    matrix, row_of, candidates = rows.matrix, rows.row_of, rows.candidates
    if not scores_usable(model, rows):
        return 0  # trained on another index version: its rows are not these
    taken = list(document_rows(plan, row_of, state.labels).values())
    p = np.load(scores_beside(model.scores_path, "labels"))
    labels = active.hybrid_labels(p, candidates, taken)
    docs = documents_of_rows(plan, matrix, sorted(labels))
    row_of_doc = {d.pk: row_of[d.docid] for d in docs}
    now = timezone.now()
    labelled = [
        MachineLabel(
            project_id=plan.project_id,
            topic_id=plan.topic_id,
            document_id=d.pk,
            relevant=bool(labels[row_of_doc[d.pk]][0]),
            probability=min(1.0, max(0.0, labels[row_of_doc[d.pk]][1])),
            model_version=model.version,
            labelled_at=now,
        )
        for d in docs
    ]
    with transaction.atomic():
        current = LearningModel.objects.filter(plan=plan).order_by("-version").first()
        if current is not None and current.version != model.version:
            return 0  # a newer version has labelled (or will label) them
        MachineLabel.objects.filter(project_id=plan.project_id, topic_id=plan.topic_id).delete()
        MachineLabel.objects.bulk_create(labelled, batch_size=2000)
    return len(labelled)
