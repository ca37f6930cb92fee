"""What ranking keeps: pooling provenance, topic seeds, active-learning plans and their
model versions, machine labels, and the persona sensitivity classifiers' versions.

Created by ``annotate``'s migrations and moved here with their tables (``db_table``), so
moving them changed no data. Models hold single-row logic only.
"""

from django.conf import settings
from django.db import models

from annotate.models import (
    AnnotationProject,
    Collection,
    Document,
    Judgment,
    Persona,
    Round,
    Topic,
)


class MachineLabel(models.Model):
    """The active-learning model's relevance label for a document no annotator judged, with
    its probability: what turns human qrels into hybrid qrels (docs/domain.md §4).

    One current label per (project, topic, document); ``model_version`` says which trained
    model gave it. Exports leave machine labels out unless asked, and flag them when in.
    """

    project = models.ForeignKey(
        AnnotationProject, on_delete=models.CASCADE, related_name="machine_labels"
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    relevant = models.BooleanField()
    probability = models.FloatField(help_text="P(relevant) under the model")
    model_version = models.PositiveIntegerField()
    labelled_at = models.DateTimeField()

    class Meta:
        db_table = "annotate_machinelabel"  # annotate's table, moved
        ordering = ["project_id", "topic_id", "document_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "topic", "document"], name="machine_label_once"
            ),
            models.CheckConstraint(
                condition=models.Q(probability__gte=0, probability__lte=1),
                name="machine_label_probability",
            ),
        ]

    def __str__(self):
        return f"machine label of topic {self.topic_id} doc {self.document_id}"


class PoolEntry(models.Model):
    """Which pooling system retrieved a document for a topic, at which rank (provenance)."""

    project = models.ForeignKey(
        AnnotationProject, on_delete=models.CASCADE, related_name="pool_entries"
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    system = models.CharField(max_length=60, help_text="e.g. bm25+rm3 title+desc")
    rank = models.PositiveIntegerField(help_text="0-based rank in the system's run")
    score = models.FloatField()

    class Meta:
        db_table = "annotate_poolentry"  # annotate's table, moved
        ordering = ["project_id", "topic_id", "system", "rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "topic", "document", "system"], name="pool_entry_once"
            ),
        ]

    def __str__(self):
        return f"{self.system} rank {self.rank} for topic {self.topic_id}"


class TopicSeed(models.Model):
    """A document the lead marked while searching to write or refine a topic (interactive
    search, IS): a seed judgment for active learning, counted as judging cost."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="seeds")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    relevance = models.PositiveSmallIntegerField(choices=Judgment.Relevance.choices)
    query = models.TextField(blank=True, help_text="The search that found it")
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    marked_at = models.DateTimeField()

    class Meta:
        db_table = "annotate_topicseed"  # annotate's table, moved
        ordering = ["topic_id", "marked_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["topic", "document"], name="topic_seed_once"),
        ]

    def __str__(self):
        return f"seed of topic {self.topic_id}: doc {self.document_id} ({self.relevance})"


class LearningPlan(models.Model):
    """Active learning for one topic of a project (docs/domain.md §4): how documents are
    chosen, how many, and where the loop stands."""

    class Strategy(models.TextChoices):
        CAL = "cal", "CAL: most likely relevant"
        SAL = "sal", "SAL: most uncertain"
        SPL = "spl", "SPL: random"
        SENSITIVITY = "sensitivity", "Sensitivity uncertain among likely relevant"

    class SeedMode(models.TextChoices):
        IS = "is", "Interactive search (the topic's seeds)"
        RDS = "rds", "Walk down one system's ranking (RDS)"

    class Candidates(models.TextChoices):
        POOL = "pool", "The pool"
        COLLECTION = "collection", "The whole collection"

    class Status(models.TextChoices):
        SEEDING = "seeding", "Seeding"
        LEARNING = "learning", "Learning"
        FLAGGED = "flagged", "Flagged: seeding gave up"
        FINISHED = "finished", "Budget spent"
        PAUSED = "paused", "Paused"

    project = models.ForeignKey(
        AnnotationProject, on_delete=models.CASCADE, related_name="learning_plans"
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="+")
    strategy = models.CharField(max_length=12, choices=Strategy.choices, default=Strategy.CAL)
    seed_mode = models.CharField(max_length=4, choices=SeedMode.choices, default=SeedMode.IS)
    candidates = models.CharField(
        max_length=10, choices=Candidates.choices, default=Candidates.POOL
    )
    batch_size = models.PositiveIntegerField(null=True, blank=True)
    batch_percent = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Batch as a percentage of the candidates"
    )
    # AutoTAR's growing batches (core.screening.autotar_batch_at): batch_size first, then
    # B + ceil(B / 10) after each batch. The default of new plans (docs/active-learning.md).
    growing = models.BooleanField(
        default=False, help_text="Growing batches (AutoTAR): batch size first, then +ceil(B/10)"
    )
    # Growing batches: how many judged documents (past the seeds) come one at a time, each
    # retrained after, before the batches grow; None: every one (one document queued
    # ahead, the annotator never waits). The default of new plans, measured against
    # AutoTAR's growth and ASReview in docs/active-learning.md; plans made before it: 0.
    singles = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=None,
        help_text="Growing batches: documents judged one at a time first (empty: all)",
    )
    budget = models.PositiveIntegerField(help_text="Documents judged by people, seeds included")
    retrain_every = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Retrain after this many judged documents (default: a batch)",
    )
    random_seed = models.IntegerField(default=0)
    rds_system = models.CharField(max_length=40, default="bm25.title")
    rds_min_relevant = models.PositiveSmallIntegerField(default=1)
    rds_min_nonrelevant = models.PositiveSmallIntegerField(default=1)
    rds_max = models.PositiveIntegerField(default=100)
    rds_walked = models.PositiveIntegerField(default=0)
    sensitivity_persona = models.ForeignKey(
        Persona, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SEEDING)
    status_message = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # What the lead wants certified (core.stopping): recall of at least recall_target,
    # with this confidence.
    recall_target = models.FloatField(default=0.8)
    confidence = models.FloatField(default=0.95)

    class Meta:
        db_table = "annotate_learningplan"  # annotate's table, moved
        ordering = ["project_id", "topic_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "topic"], name="learning_plan_once"),
            models.CheckConstraint(
                condition=models.Q(batch_size__isnull=False)
                | models.Q(batch_percent__isnull=False),
                name="learning_plan_batch",
            ),
        ]

    def __str__(self):
        return f"{self.get_strategy_display()} for topic {self.topic_id} of {self.project}"


class LearningModel(models.Model):
    """One trained version of a plan's relevance classifier: what it was trained on (the
    judgment and seed high-water marks), its parameters, and where its scores are stored."""

    plan = models.ForeignKey(LearningPlan, on_delete=models.CASCADE, related_name="models")
    version = models.PositiveIntegerField()
    judgment_mark = models.BigIntegerField(help_text="Largest judgment id it saw (0: none)")
    # Ids are drawn before commit, so a judgment below the mark can commit after the model
    # read the judgments; the count tells such a late one apart (ranking.learning_state,
    # ``late_judgments``; null: stored before counts were kept).
    judgment_count = models.PositiveIntegerField(
        null=True,
        help_text="Judgments of the topic it saw, the check sample's left out (null: not recorded)",
    )
    seed_mark = models.BigIntegerField(help_text="Largest topic seed id it saw (0: none)")
    judged = models.PositiveIntegerField(help_text="Documents it was trained on")
    positives = models.PositiveIntegerField()
    negatives = models.PositiveIntegerField()
    params = models.JSONField(default=dict)
    scores_path = models.CharField(max_length=500)
    # The collection's index version whose TF-IDF rows the scores are in: scores are read
    # only against that version's matrix (null: a version stored before this was recorded).
    index_version = models.PositiveIntegerField(null=True)
    prevalence = models.FloatField(null=True, help_text="Estimated share relevant")
    seconds = models.FloatField()
    trained_at = models.DateTimeField()

    class Meta:
        db_table = "annotate_learningmodel"  # annotate's table, moved
        ordering = ["plan_id", "version"]
        get_latest_by = "version"
        constraints = [
            models.UniqueConstraint(fields=["plan", "version"], name="learning_model_version"),
            # Retraining on the same judgments over the same index is the same version
            # (idempotent retrain); a new index version needs scores of its own, and a
            # judgment that committed late (the same mark, one more judgment) a version.
            models.UniqueConstraint(
                fields=["plan", "judgment_mark", "judgment_count", "seed_mark", "index_version"],
                name="learning_model_once_per_count",
            ),
        ]

    def __str__(self):
        return f"model v{self.version} of plan {self.plan_id}"


class CheckSample(models.Model):
    """A plan's random check sample (``core.stopping``): drawn uniformly, without
    replacement, from the candidates that were neither judged nor queued (the frame);
    judged like any task (source ``check``) but kept out of the classifier's training.

    ``documents`` in draw order; ``before``: the documents judged or queued at the draw
    (outside the frame); ``reached``: sample documents the review's selection picked (at no
    cost: already judged), which the target method and QBCB count."""

    plan = models.ForeignKey(LearningPlan, on_delete=models.CASCADE, related_name="checks")
    frame = models.PositiveIntegerField(help_text="Documents the sample was drawn from")
    documents = models.JSONField(default=list)
    before = models.JSONField(default=list)
    reached = models.JSONField(default=list)
    margin = models.FloatField(help_text="The margin the size was chosen for")
    random_seed = models.BigIntegerField()
    drawn_at = models.DateTimeField()
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )

    class Meta:
        ordering = ["plan_id", "drawn_at"]

    def __str__(self):
        return f"check sample of {len(self.documents)} for plan {self.plan_id}"


class SensitivityModel(models.Model):
    """One trained version of a persona's sensitivity classifier over a collection, with
    where its labels came from and its cross-validated report (docs/domain.md §6)."""

    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="sensitivity_models"
    )
    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField()
    source = models.CharField(
        max_length=200,
        help_text="annotations, reference, or categories:<codes> (a surrogate, e.g. CACM's)",
    )
    objective = models.CharField(max_length=2, default="f1")
    report = models.JSONField(default=dict)
    path = models.CharField(max_length=500, help_text="The stored featurizer and model")
    trained_at = models.DateTimeField()
    seconds = models.FloatField()

    class Meta:
        db_table = "annotate_sensitivitymodel"  # annotate's table, moved
        ordering = ["collection_id", "persona_id", "version"]
        get_latest_by = "version"
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "persona", "version"], name="sensitivity_model_version"
            ),
        ]

    def __str__(self):
        return f"sensitivity model v{self.version} of {self.persona} on {self.collection}"
