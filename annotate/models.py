"""Collections, documents, personas, topics, reference labels and background jobs.

Models hold single-row logic only; writes go through ``annotate.services`` and reads through
``annotate.selectors``.
"""

from django.conf import settings
from django.db import models
from django.urls import reverse


class Collection(models.Model):
    """A set of documents searched and judged together (an email archive, Cranfield, ...)."""

    class Kind(models.TextChoices):
        EMAIL = "email", "Email"
        SMART = "smart", "SMART test collection"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.EMAIL)
    description = models.TextField(blank=True)
    # Bumped whenever documents are added or changed; indexes and features are keyed by it.
    version = models.PositiveIntegerField(default=0)
    indexed_version = models.PositiveIntegerField(null=True, blank=True)
    indexed_at = models.DateTimeField(null=True, blank=True)
    # Domains counted as internal to the donor's organisation (sensitivity features).
    internal_domains = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("collection-detail", args=[self.slug])

    @property
    def index_is_current(self) -> bool:
        return self.indexed_version is not None and self.indexed_version == self.version


class Document(models.Model):
    """One message (or one record of a classic test collection)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    docid = models.CharField(max_length=255, help_text="External id, unique in the collection")
    message_id = models.CharField(max_length=998, blank=True, db_index=True)
    subject = models.TextField(blank=True)
    from_header = models.TextField(blank=True)
    to_header = models.TextField(blank=True)
    cc_header = models.TextField(blank=True)
    bcc_header = models.TextField(blank=True)
    # Normalised addresses: {"from": "a@x", "to": [...], "cc": [...], "bcc": [...]}.
    addresses = models.JSONField(default=dict, blank=True)
    date = models.DateTimeField(null=True, blank=True)
    body = models.TextField(blank=True)
    body_from_html = models.BooleanField(default=False)
    raw_headers = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64, db_index=True)
    source_path = models.TextField(blank=True)
    # What could not be decoded exactly (charset fallbacks, MIME defects, bad dates, ...).
    decode_problems = models.JSONField(default=list, blank=True)
    # Extra fields of non-email collections (SMART .B, .K, .C, ...).
    metadata = models.JSONField(default=dict, blank=True)
    # Docids of copies of this message that were found and not stored again.
    duplicate_docids = models.JSONField(default=list, blank=True)
    # The mailbox folder the message was filed in ("Inbox/Projects"; PST, EAXS, Maildir++
    # and mbox folders, or the directory of a file), "" when the input had none.
    folder = models.CharField(max_length=500, blank=True)
    # Threading headers, ids without angle brackets (core.parsing.mail_threads).
    in_reply_to = models.CharField(max_length=998, blank=True)
    references = models.JSONField(default=list, blank=True)
    # The thread this message belongs to: equal keys, one thread (annotate.threads sets it
    # after every import, from the headers above and then the subject).
    thread_key = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection_id", "docid"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "docid"], name="document_docid_unique"),
        ]
        indexes = [
            models.Index(fields=["collection", "content_hash"]),
            models.Index(fields=["collection", "thread_key"], name="document_thread_idx"),
            models.Index(fields=["collection", "folder"], name="document_folder_idx"),
        ]

    def __str__(self):
        return f"{self.docid}: {self.subject[:60]}"

    def get_absolute_url(self):
        return reverse("document-detail", args=[self.collection.slug, self.pk])


class ThreadLink(models.Model):
    """A name through which a document joins a thread: a Message-ID it has or cites, or its
    subject group (``core.parsing.mail_threads.thread_nodes``), hashed to a fixed length.
    An import looks its new messages' names up here to find the stored threads they join,
    instead of re-threading the whole collection (``annotate.threads``)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="thread_links")
    node = models.CharField(max_length=32)

    class Meta:
        indexes = [models.Index(fields=["collection", "node"], name="threadlink_node_idx")]

    def __str__(self):
        return f"{self.document_id}: {self.node}"


class Attachment(models.Model):
    """A MIME part that is not the message body; binary parts keep name, type and size only."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="attachments")
    position = models.PositiveSmallIntegerField()
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=255)
    size = models.PositiveIntegerField(default=0)
    is_text = models.BooleanField(default=False)
    text = models.TextField(blank=True)

    class Meta:
        ordering = ["document_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="attachment_pos_unique"),
        ]

    def __str__(self):
        return self.filename


class Persona(models.Model):
    """The fictional donor whose point of view defines sensitivity (docs/domain.md §2)."""

    name = models.CharField(max_length=200, unique=True)
    nickname = models.CharField(max_length=100, blank=True)
    occupation = models.CharField(max_length=200, blank=True)
    institution = models.CharField(max_length=200, blank=True)
    background = models.TextField(blank=True)
    email_use = models.TextField("how they used email", blank=True)
    why_it_matters = models.TextField("why their email matters to researchers", blank=True)
    audience = models.TextField("intended audience", blank=True)
    pain_points = models.TextField(
        blank=True, help_text="The kinds of content they would not want shown"
    )
    goals = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Topic(models.Model):
    """A TREC-style information need over one collection."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="topics")
    number = models.CharField(max_length=32)
    title = models.TextField()
    description = models.TextField(blank=True)
    narrative = models.TextField(blank=True)

    class Meta:
        ordering = ["collection_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "number"], name="topic_number_unique"),
        ]

    def __str__(self):
        return f"{self.number}: {self.title}"


class ReferenceRelevance(models.Model):
    """An imported relevance judgment (a qrels line), kept apart from annotators' judgments."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="reference_qrels")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    grade = models.SmallIntegerField(help_text="0 not, 1 somewhat, 2 highly relevant")
    source = models.CharField(max_length=200, help_text="File or set the label came from")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["topic", "document", "source"], name="refrel_unique"),
        ]

    def __str__(self):
        return f"topic {self.topic_id} doc {self.document_id}: {self.grade} ({self.source})"


class ReferenceSensitivity(models.Model):
    """An imported sensitivity label of a document for a persona (optionally per topic)."""

    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="+")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, null=True, blank=True)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    sensitive = models.BooleanField()
    source = models.CharField(max_length=200)

    class Meta:
        constraints = [
            # Two partial constraints instead of nulls_distinct=False, which SQLite lacks.
            models.UniqueConstraint(
                fields=["persona", "topic", "document", "source"],
                condition=models.Q(topic__isnull=False),
                name="refsens_topic_unique",
            ),
            models.UniqueConstraint(
                fields=["persona", "document", "source"],
                condition=models.Q(topic__isnull=True),
                name="refsens_all_topics_unique",
            ),
        ]

    def __str__(self):
        topic = self.topic_id or "*"
        return f"persona {self.persona_id} topic {topic} doc {self.document_id}: {self.sensitive}"


class Job(models.Model):
    """A long-running piece of work (import, index build) with progress and a report."""

    class Kind(models.TextChoices):
        IMPORT = "import", "Import"
        INDEX = "index", "Index and features"
        POOL = "pool", "Pooling"
        SENSITIVITY = "sensitivity", "Sensitivity classifier"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    params = models.JSONField(default=dict, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    report = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Written every few seconds while a worker runs the job (annotate.jobs.job_running).
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def is_failed(self) -> bool:
        return self.status == self.Status.FAILED

    @property
    def status_label(self) -> str:
        """The status as the pages say it: an import that stored rows and refused others
        "finished with errors" (its rows are kept), not "failed"."""
        report = self.report if isinstance(self.report, dict) else {}
        stored = sum(
            v for v in (report.get("created"), report.get("updated")) if isinstance(v, int)
        )
        if self.is_failed and stored > 0:
            return "Finished with errors"
        return self.get_status_display()

    @property
    def percent(self) -> int:
        if not self.progress_total:
            return 100 if self.is_finished else 0
        return min(100, round(100 * self.progress_done / self.progress_total))


# --- Annotation -----------------------------------------------------------------------------


class AnnotationProject(models.Model):
    """Who judges which (topic, document, persona) tasks of a collection, and how."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="projects")
    personas = models.ManyToManyField(Persona, related_name="projects")
    topics = models.ManyToManyField(Topic, related_name="projects")
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="projects")
    overlap = models.PositiveSmallIntegerField(
        default=1, help_text="How many annotators judge each production task"
    )
    double_percent = models.PositiveSmallIntegerField(
        default=0,
        help_text="Percentage of production tasks judged by two annotators (for agreement), "
        "when the overlap is 1",
    )

    class RelevanceRule(models.TextChoices):
        HIGHER = "higher", "The more relevant grade"
        MAJORITY = "majority", "The majority grade (a tie: the more relevant)"

    lease_minutes = models.PositiveSmallIntegerField(default=30)
    guidelines = models.TextField(blank=True)
    relevance_rule = models.CharField(
        max_length=10,
        choices=RelevanceRule.choices,
        default=RelevanceRule.HIGHER,
        help_text="The exported grade when annotators disagree and nobody adjudicated",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def open_round_ids(self) -> list[int]:
        """Return the ids of open rounds, read once per instance (that is, per request)."""
        if not hasattr(self, "_open_round_ids"):
            self._open_round_ids = list(
                self.rounds.filter(is_open=True).values_list("id", flat=True)
            )
        return self._open_round_ids


class Round(models.Model):
    """A training round (every annotator judges the same tasks) or a production round."""

    class Kind(models.TextChoices):
        TRAINING = "training", "Training"
        PRODUCTION = "production", "Production"

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.PRODUCTION)
    is_open = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="round_number_unique"),
        ]

    def __str__(self):
        return f"{self.project} round {self.number} ({self.kind})"


class Task(models.Model):
    """One (topic, document, persona) to judge, by ``required`` annotators."""

    class Source(models.TextChoices):
        EXPLICIT = "explicit", "Explicit list"
        POOL = "pool", "Pool"
        ACTIVE = "active", "Active learning"
        SEED = "seed", "Seed walk (RDS)"
        CHECK = "check", "Check sample (random, for recall estimates)"

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="tasks")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="tasks")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="tasks")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="tasks")
    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="tasks")
    required = models.PositiveSmallIntegerField(default=1)
    # Live leases plus submitted judgments; changed only under this row's lock (G1).
    claimed = models.PositiveSmallIntegerField(default=0)
    # Judgments stored, kept with the judgment in one transaction (progress without a join).
    judged = models.PositiveSmallIntegerField(default=0)
    position = models.PositiveIntegerField(default=0, help_text="Order inside its topic batch")
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.EXPLICIT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Plain columns: ordering by the foreign keys themselves would join their tables.
        ordering = ["round_id", "topic_id", "persona_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["round", "topic", "document", "persona"], name="task_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(claimed__lte=models.F("required")), name="task_not_overclaimed"
            ),
        ]
        indexes = [
            # The claim query walks this index in batch order and stops at the first free task.
            models.Index(
                fields=["project", "round", "topic", "persona", "position", "id"],
                condition=models.Q(claimed__lt=models.F("required")),
                name="task_free_in_order",
            ),
        ]

    def __str__(self):
        return f"task {self.pk}: topic {self.topic_id} doc {self.document_id}"


class BatchCount(models.Model):
    """Tasks and judgments needed of one (round, topic, persona) batch.

    Kept by ``projects.project_tasks_add`` in the transaction that adds the tasks (its row
    lock also orders concurrent adds to the batch), so the judging page's progress reads one
    row instead of summing the batch's tasks on every save (issue 36).
    """

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="batch_counts")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="+")
    tasks = models.PositiveIntegerField(default=0)
    required = models.PositiveIntegerField(default=0, help_text="Judgments the tasks need")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["round", "topic", "persona"], name="batch_count_unique"
            ),
        ]

    def __str__(self):
        return f"round {self.round_id} topic {self.topic_id}: {self.tasks} tasks"


class JudgedCount(models.Model):
    """Judgments one annotator stored in one (round, topic, persona) batch.

    Kept by ``judgments.judgment_submit`` in the judgment's transaction. One row per
    annotator and batch, so annotators judging the same batch never wait on each other's
    counter; a batch's progress sums at most one row per annotator.
    """

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="judged_counts")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    judged = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["round", "topic", "persona", "annotator"], name="judged_count_unique"
            ),
        ]

    def __str__(self):
        return f"round {self.round_id} topic {self.topic_id}: {self.judged} by {self.annotator_id}"


class ClaimFrontier(models.Model):
    """Where an annotator's claim starts in one round: a key in queue order (topic, persona,
    position, task id) below which no free task is left for them.

    With two or more judgments per task a task the annotator judged stays free until the
    others judge it too; without this the claim walked past all of those, so its cost grew
    with how far the annotator was ahead (bench/claim_walk.py). The claim moves it forward
    (``judgments._claim_free_task``); whatever frees a task or adds one below it lowers it,
    in the same transaction (``judgments.frontiers_lower``). On PostgreSQL the two never
    overlap in a round: claims hold a shared advisory lock on the round, the writers that
    lower an exclusive one (see ``judgments._round_lock``).
    """

    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="+")
    # The key's parts as plain numbers (the task's topic_id, persona_id, position and id).
    at_topic = models.BigIntegerField(default=0)
    at_persona = models.BigIntegerField(default=0)
    at_position = models.BigIntegerField(default=0)
    at_task = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # Round first: lowering every frontier of a round reads this index too.
            models.UniqueConstraint(fields=["round", "annotator"], name="claim_frontier_unique"),
        ]

    def __str__(self):
        return f"round {self.round_id} annotator {self.annotator_id}: task {self.at_task}"


class Assignment(models.Model):
    """An annotator's claim on a task: a lease that expires, then a submission or a skip."""

    class Status(models.TextChoices):
        LEASED = "leased", "Leased"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"
        EXPIRED = "expired", "Expired"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.LEASED)
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    skip_reason = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="assignment_unique"),
        ]
        indexes = [
            models.Index(fields=["annotator", "status"]),
            models.Index(fields=["status", "expires_at"]),
        ]

    def __str__(self):
        return f"{self.annotator_id} on task {self.task_id}: {self.status}"


class Answer(models.TextChoices):
    YES = "yes", "Yes"
    NO = "no", "No"
    DONT_KNOW = "dont_know", "Don't know"


class Judgment(models.Model):
    """An annotator's answers for one task (docs/domain.md §1, fig. 3.4 of the dissertation)."""

    class Relevance(models.IntegerChoices):
        NOT = 0, "Not relevant"
        SOMEWHAT = 1, "Somewhat relevant"
        HIGHLY = 2, "Highly relevant"

    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="judgments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments"
    )
    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="judgments")
    relevance = models.PositiveSmallIntegerField(choices=Relevance.choices)
    persona_sensitive = models.CharField(max_length=10, choices=Answer.choices)
    personal_sensitive = models.CharField(max_length=10, choices=Answer.choices)
    comment = models.TextField(blank=True)
    active_seconds = models.FloatField(help_text="Time on task, excluding hidden or idle time")
    started_at = models.DateTimeField()
    submitted_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    version = models.PositiveIntegerField(default=1)
    idempotency_key = models.CharField(max_length=100)
    # Hash of the first submitted answers: a retry with the same key must carry the same body.
    request_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["-submitted_at"]
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="judgment_once"),
            models.UniqueConstraint(
                fields=["annotator", "idempotency_key"], name="judgment_idempotency"
            ),
        ]

    def __str__(self):
        return f"judgment {self.pk} v{self.version} by {self.annotator_id} on {self.task_id}"


class JudgmentVersion(models.Model):
    """An earlier state of a judgment, kept when the annotator changes it."""

    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="history")
    version = models.PositiveIntegerField()
    relevance = models.PositiveSmallIntegerField(choices=Judgment.Relevance.choices)
    persona_sensitive = models.CharField(max_length=10, choices=Answer.choices)
    personal_sensitive = models.CharField(max_length=10, choices=Answer.choices)
    comment = models.TextField(blank=True)
    active_seconds = models.FloatField()
    recorded_at = models.DateTimeField(help_text="When this version was current until")

    class Meta:
        ordering = ["judgment_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["judgment", "version"], name="judgment_version_unique"),
        ]

    def __str__(self):
        return f"judgment {self.judgment_id} v{self.version}"


class Adjudication(models.Model):
    """The lead's final label for one (topic, persona, document) of a project, with a reason.

    Either answer may be left undecided (relevance None, persona_sensitive ""): the export
    then uses the annotators' agreement or the project's rule for it.
    """

    project = models.ForeignKey(
        AnnotationProject, on_delete=models.CASCADE, related_name="adjudications"
    )
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="+")
    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="+")
    relevance = models.PositiveSmallIntegerField(
        choices=Judgment.Relevance.choices, null=True, blank=True
    )
    persona_sensitive = models.CharField(
        max_length=10, choices=[(Answer.YES, "Yes"), (Answer.NO, "No")], blank=True
    )
    reason = models.TextField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications"
    )
    decided_at = models.DateTimeField()

    class Meta:
        ordering = ["project_id", "topic_id", "persona_id", "document_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "topic", "persona", "document"], name="adjudication_once"
            ),
        ]

    def __str__(self):
        return f"adjudication of topic {self.topic_id} doc {self.document_id}"


class Lexicon(models.Model):
    """A persona's own sensitive terms (issue 20): their pain points in words a recogniser
    can find (people, projects, places), edited by a lead. Changing one recomputes the
    entities of every collection in the worker."""

    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="lexicons")
    name = models.CharField(max_length=100, help_text="What the terms are, e.g. “colleagues”")
    terms = models.TextField(
        help_text="One term or phrase per line (or several separated by commas); # comments"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["persona_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["persona", "name"], name="lexicon_name_unique"),
        ]

    def __str__(self):
        return f"{self.persona}: {self.name}"


class DocumentEntity(models.Model):
    """One sensitive span the recognisers found in a document (``core.recognisers``):
    ``persona`` is set for a persona's own lexicon terms, empty for personal data."""

    class Field(models.TextChoices):
        SUBJECT = "subject", "Subject"
        BODY = "body", "Body"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="entities")
    persona = models.ForeignKey(
        Persona, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    field = models.CharField(max_length=8, choices=Field.choices)
    kind = models.CharField(max_length=16)
    label = models.CharField(max_length=100, blank=True, help_text="The persona's lexicon")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()

    class Meta:
        ordering = ["document_id", "field", "start"]
        indexes = [models.Index(fields=["document", "persona"])]

    def __str__(self):
        return f"{self.kind} in doc {self.document_id} {self.field}[{self.start}:{self.end}]"
