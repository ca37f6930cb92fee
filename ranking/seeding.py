"""Seeding an active-learning plan before its first model: IS waits for the topic's seed
marks; RDS walks down one system's ranking, a few documents at a time, until
``rds_min_relevant`` relevant and ``rds_min_nonrelevant`` non-relevant are judged, and flags
the topic after ``rds_max`` documents."""

from django.db import transaction

from annotate.models import Document, Task
from ranking.learning_plans import learning_nudge
from ranking.learning_queue import plan_tasks_add
from ranking.learning_state import PlanState
from ranking.models import LearningPlan

RDS_AHEAD = 3  # documents of the RDS walk kept queued


def seed_step(plan: LearningPlan, state: PlanState) -> dict:
    relevant = state.relevant
    nonrelevant = len(state.labels) - relevant
    enough = relevant >= plan.rds_min_relevant and nonrelevant >= plan.rds_min_nonrelevant
    ranking = None
    if (
        not enough
        and plan.seed_mode == LearningPlan.SeedMode.RDS
        and plan.rds_walked < plan.rds_max
        and len(state.walking) < RDS_AHEAD
    ):
        # Lucene (and, the first time, its JVM) before the lock, never under it.
        ranking = _system_ranking(plan, depth=plan.rds_max)
    with transaction.atomic():
        plan = LearningPlan.objects.select_for_update().get(pk=plan.pk)
        if plan.status != LearningPlan.Status.SEEDING:
            return {"status": plan.status}
        if enough:
            plan.status = LearningPlan.Status.LEARNING
            plan.status_message = (
                f"Seeded with {relevant} relevant and {nonrelevant} non-relevant documents"
            )
            plan.save(update_fields=["status", "status_message"])
            return {"status": plan.status}
        if plan.seed_mode == LearningPlan.SeedMode.IS:
            plan.status_message = (
                f"Waiting for seeds: mark at least {plan.rds_min_relevant} relevant and "
                f"{plan.rds_min_nonrelevant} non-relevant documents while searching for the "
                f"topic ({relevant} and {nonrelevant} so far)"
            )
            plan.save(update_fields=["status_message"])
            return {"status": plan.status, "seeds": len(state.labels)}
        return _rds_walk(plan, state, relevant, nonrelevant, ranking)


def _rds_walk(
    plan: LearningPlan, state: PlanState, relevant: int, nonrelevant: int, ranking
) -> dict:
    """Keep ``RDS_AHEAD`` documents of the RDS system's ranking (``ranking``, searched
    before the lock) queued, so the annotator does not wait for a step between them (caller
    holds the plan lock). Gives up, flagging the topic, once ``rds_max`` documents were
    walked and judged without enough of each kind."""
    if plan.rds_walked >= plan.rds_max:
        if state.walking:
            return {"status": plan.status, "waiting": len(state.walking)}
        plan.status = LearningPlan.Status.FLAGGED
        plan.status_message = (
            f"RDS gave up after {plan.rds_walked} documents of {plan.rds_system}: "
            f"{relevant} relevant and {nonrelevant} non-relevant found, "
            f"{plan.rds_min_relevant} and {plan.rds_min_nonrelevant} needed"
        )
        plan.save(update_fields=["status", "status_message"])
        return {"status": plan.status}
    want = RDS_AHEAD - len(state.walking)
    if want <= 0:
        return {"status": plan.status, "waiting": len(state.walking)}
    if ranking is None:  # the plan changed between the search and the lock: step again
        learning_nudge(plan_id=plan.pk)
        return {"status": plan.status}
    taken = set(state.labels) | state.queued
    take = []
    walked = plan.rds_walked
    for doc in ranking[walked:]:
        walked += 1
        if doc.pk not in taken:
            take.append(doc)
        if len(take) >= want or walked >= plan.rds_max:
            break
    if walked >= len(ranking):
        walked = plan.rds_max  # the ranking ran out: nothing more to walk
    plan.rds_walked = walked
    plan.status_message = (
        f"Walking down {plan.rds_system}: {walked} of at most {plan.rds_max} documents, "
        f"{relevant} relevant and {nonrelevant} non-relevant so far"
    )
    plan.save(update_fields=["rds_walked", "status_message"])
    added = plan_tasks_add(plan, take, Task.Source.SEED)
    if not take and not state.walking:
        learning_nudge(plan_id=plan.pk)  # the next step flags the topic
    return {"status": plan.status, "added": added}


def _system_ranking(plan: LearningPlan, *, depth: int) -> list[Document]:
    from core import lucene
    from ranking.pooling import FIELDS, SYSTEMS
    from ranking.services import index_paths

    system = next(s for s in SYSTEMS if s.name == plan.rds_system)
    hits = lucene.search(
        index_paths(collection=plan.project.collection).lucene,
        FIELDS[system.field](plan.topic),
        k=depth,
        model=system.model,
        rm3=system.rm3,
    )
    docs = {
        d.docid: d
        for d in Document.objects.filter(
            collection_id=plan.project.collection_id, docid__in=[h.docid for h in hits]
        ).only("id", "docid")
    }
    return [docs[h.docid] for h in hits if h.docid in docs]
