"""Searching a published collection, the archivist's review of uncertain documents, and the
append-only audit log (docs/domain.md §9; RELIABILITY.md G7, G9)."""

from django.conf import settings
from django.db import models

from annotate.models import Collection, Document, Persona


class Publication(models.Model):
    """A collection opened to searchers, protected for one persona."""

    collection = models.OneToOneField(
        Collection, on_delete=models.CASCADE, related_name="publication"
    )
    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    published = models.BooleanField(default=False)
    band_low = models.FloatField(
        default=0.02, help_text="P(sensitive) below this: shown at once (if not withheld)"
    )
    band_high = models.FloatField(
        default=0.8, help_text="P(sensitive) at or above this: never shown, never asked"
    )
    review_k = models.PositiveIntegerField(
        default=20, help_text="Ask about uncertain documents among the first k results"
    )
    most_uncertain = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Ask about at most this many per search, the most uncertain among the first "
        "k (P nearest 0.5); the other uncertain ones are held back. Empty: every uncertain one",
    )
    show_pending_notice = models.BooleanField(
        default=True, help_text="Tell searchers that more results may follow after review"
    )
    retrain_every = models.PositiveIntegerField(
        default=10, help_text="Retrain the classifier after this many new decisions"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(band_low__gte=0)
                & models.Q(band_low__lte=models.F("band_high"))
                & models.Q(band_high__lte=1),
                name="publication_band",
            ),
        ]

    def __str__(self):
        return f"{self.collection} for {self.persona}"


class SearchLog(models.Model):
    """One search by a searcher: the query log that review requests and exposing queries
    come from."""

    searcher = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    query = models.TextField()
    shown = models.JSONField(default=list, help_text="Document ids shown at once, in order")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["collection", "created_at"])]

    def __str__(self):
        return f"search {self.pk}: {self.query[:40]}"


class ReviewRequest(models.Model):
    """An uncertain document a searcher's results are waiting on."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for review"
        RELEASED = "released", "Released"
        WITHHELD = "withheld", "Withheld"
        NOT_RELEVANT = "not_relevant", "Not relevant"

    search = models.ForeignKey(SearchLog, on_delete=models.CASCADE, related_name="requests")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    rank = models.PositiveIntegerField(help_text="0-based rank in the search's ranking")
    p_sensitive = models.FloatField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    requested_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["requested_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["search", "document"], name="review_request_once"),
        ]
        indexes = [models.Index(fields=["status", "requested_at"])]

    def __str__(self):
        return f"review of doc {self.document_id} for search {self.search_id} ({self.status})"


class Decision(models.Model):
    """An archivist's decision on a document for a persona. The latest one counts; a
    withholding may expire, after which the document is asked about again."""

    class Kind(models.TextChoices):
        RELEASE = "release", "Release"
        WITHHOLD = "withhold", "Withhold"
        NOT_RELEVANT = "not_relevant", "Not relevant"
        REOPEN = "reopen", "Reopened by a lead"

    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    until = models.DateField(null=True, blank=True, help_text="A withholding ends on this day")
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField()
    p_sensitive = models.FloatField(null=True, help_text="The classifier's view at the time")

    class Meta:
        ordering = ["persona_id", "document_id", "decided_at", "id"]
        indexes = [models.Index(fields=["persona", "document", "decided_at"])]

    def __str__(self):
        return f"{self.kind} of doc {self.document_id} for persona {self.persona_id}"


class AuditEvent(models.Model):
    """Append-only: a database trigger refuses updates and deletes (G9)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    action = models.CharField(max_length=40)
    collection = models.ForeignKey(
        Collection, on_delete=models.PROTECT, null=True, related_name="+"
    )
    document = models.ForeignKey(Document, on_delete=models.PROTECT, null=True, related_name="+")
    detail = models.JSONField(default=dict)
    at = models.DateTimeField()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["action", "at"])]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.action} by {self.user_id}"


class Exposure(models.Model):
    """The exposing queries of a document for a persona's searchers, computed by the worker
    once per index version (``review.exposure``; docs/domain.md §10)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Waiting for the worker"
        RUNNING = "running", "Being computed"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="+")
    index_version = models.PositiveIntegerField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    requested_at = models.DateTimeField()
    computed_at = models.DateTimeField(null=True, blank=True)
    visible = models.BooleanField(
        null=True, help_text="Whether searchers could see the document when it was computed"
    )
    queries = models.JSONField(
        default=list, help_text="Exposing queries, most exposing first: text, source, rank"
    )
    summary = models.JSONField(default=dict, help_text="Candidates, verified, timings")
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["document", "persona", "index_version"], name="exposure_once_per_version"
            ),
        ]

    def __str__(self):
        return f"exposure of doc {self.document_id} for persona {self.persona_id} ({self.status})"


class RedactionReason(models.Model):
    """A reason an archivist may give for redacting a span, from a list a lead keeps (the
    exemption names of archival practice: personal data, third-party privacy, health, ...)."""

    code = models.SlugField(max_length=40, unique=True)
    label = models.CharField(max_length=200)
    active = models.BooleanField(default=True, help_text="Offered to archivists")

    class Meta:
        ordering = ["label"]

    def __str__(self):
        return self.label


class Redaction(models.Model):
    """One version of the redactions of a document for a persona (issue 20). The newest
    version counts, from the day it was made until ``until`` (an expiring restriction: after
    that day the searcher sees the text unredacted). A version with no spans lifts the
    redaction (a lead's revert, or an archivist's release without redactions). The original
    text is never changed: the searcher's text, index row, snippets and highlights are made
    from the document and its redaction in force (``review.redaction``).

    ``spans``: ``[{"field": "subject"|"body", "start": int, "end": int, "kind": str,
    "reason": code}]``, offsets into the document's field."""

    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField()
    spans = models.JSONField(default=list)
    until = models.DateField(null=True, blank=True, help_text="The redaction ends on this day")
    note = models.TextField(blank=True)
    reverts = models.PositiveIntegerField(
        null=True, blank=True, help_text="The version a lead went back to (0: none)"
    )
    shows_elsewhere = models.BooleanField(
        default=False,
        help_text="A person released this document with the words redacted in other "
        "documents of the collection left readable (otherwise they are redacted here too)",
    )
    made_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    made_at = models.DateTimeField()

    class Meta:
        ordering = ["persona_id", "document_id", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["persona", "document", "version"], name="redaction_version_unique"
            ),
        ]

    def __str__(self):
        return f"redaction v{self.version} of doc {self.document_id} for {self.persona_id}"


class ReleaseAudit(models.Model):
    """A release audit of a publication: an elusion test for sensitivity (issue 33,
    docs/release-audit.md). A simple random sample of what the persona's searchers can see
    (the frame) is judged by archivists; when every sampled message is judged, the
    certificate's figures are fixed: the number and rate of sensitive messages among the
    visible, with exact one-sided upper bounds. The judgments train nothing while the audit
    is open."""

    class Status(models.TextChoices):
        OPEN = "open", "Being judged"
        CERTIFIED = "certified", "Certified"
        CANCELLED = "cancelled", "Cancelled"

    publication = models.ForeignKey(Publication, on_delete=models.CASCADE, related_name="audits")
    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    confidence = models.FloatField()
    margin = models.FloatField(help_text="The largest rate of sensitive messages to rule out")
    frame_size = models.PositiveIntegerField(help_text="Messages searchers could see")
    sample_size = models.PositiveIntegerField()
    seed = models.BigIntegerField(help_text="The sample is drawn again from the frame by it")
    frame_digest = models.CharField(max_length=64, help_text="SHA-256 of the frame's docids")
    basis = models.JSONField(
        default=dict,
        help_text="What the visible set was built from: index and classifier versions, band, "
        "newest decision and redaction, decisions in force",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField()
    certified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    certified_at = models.DateTimeField(null=True)
    figures = models.JSONField(null=True, help_text="The certificate's numbers, fixed at the end")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["publication"],
                condition=models.Q(status="open"),
                name="release_audit_one_open_per_publication",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gt=0.5) & models.Q(confidence__lt=1),
                name="release_audit_confidence",
            ),
        ]

    def __str__(self):
        return f"release audit {self.pk} of {self.publication}"


class ReleaseAuditItem(models.Model):
    """One sampled message of a release audit and, once judged, the archivist's answer."""

    audit = models.ForeignKey(ReleaseAudit, on_delete=models.CASCADE, related_name="items")
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField(help_text="Its place in the drawn sample")
    sensitive = models.BooleanField(null=True)
    judged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    judged_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["audit_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["audit", "document"], name="audit_item_once"),
            models.UniqueConstraint(fields=["audit", "position"], name="audit_item_position"),
        ]

    def __str__(self):
        return f"item {self.position} of audit {self.audit_id}"
