"""Leads publish collections here; decisions and the audit log are read-only."""

from django.contrib import admin

from annotate.admin import ReadOnly
from review.models import AuditEvent, Decision, Publication, RedactionReason


@admin.register(Publication)
class PublicationAdmin(admin.ModelAdmin):
    list_display = (
        "collection",
        "persona",
        "published",
        "band_low",
        "band_high",
        "review_k",
        "most_uncertain",
        "updated_at",
    )
    list_filter = ("published",)


@admin.register(Decision)
class DecisionAdmin(ReadOnly):
    list_display = ("decided_at", "kind", "persona", "document", "until", "decided_by")
    list_filter = ("kind", "persona")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnly):
    list_display = ("at", "action", "user", "collection", "document")
    list_filter = ("action",)


@admin.register(RedactionReason)
class RedactionReasonAdmin(admin.ModelAdmin):
    """The reasons archivists choose from when they redact (a lead keeps the list)."""

    list_display = ("label", "code", "active")
    list_editable = ("active",)
