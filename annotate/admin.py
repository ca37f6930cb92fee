from django.contrib import admin

from annotate.models import (
    Adjudication,
    AnnotationProject,
    Assignment,
    Attachment,
    Collection,
    Document,
    Job,
    Judgment,
    JudgmentVersion,
    Persona,
    ReferenceRelevance,
    ReferenceSensitivity,
    Round,
    Task,
    Topic,
)


class ReadOnly(admin.ModelAdmin):
    """Listed and shown, never added, changed or deleted here: rows a service writes with
    what must go with them (counters, the audit chain)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "kind", "version", "indexed_version", "created_at")
    prepopulated_fields = {"slug": ("name",)}
    readonly_fields = ("version", "indexed_version", "indexed_at")


class AttachmentInline(admin.TabularInline):
    model = Attachment
    extra = 0
    fields = ("position", "filename", "content_type", "size", "is_text")
    readonly_fields = fields
    can_delete = False


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("docid", "subject", "from_header", "date", "collection")
    list_filter = ("collection", "body_from_html")
    search_fields = ("docid", "message_id", "subject", "from_header")
    list_select_related = ("collection",)
    inlines = [AttachmentInline]
    readonly_fields = ("content_hash", "created_at", "duplicate_docids")
    show_full_result_count = False

    # A document with tasks is not deleted here: its unjudged tasks would go with it behind
    # the progress counters (projects.project_tasks_add keeps them). No bulk delete either.
    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.tasks.exists():
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


@admin.register(Persona)
class PersonaAdmin(admin.ModelAdmin):
    list_display = ("name", "nickname", "occupation", "institution")
    search_fields = ("name", "nickname")


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("number", "title", "collection")
    list_filter = ("collection",)
    search_fields = ("number", "title", "description")


@admin.register(ReferenceRelevance)
class ReferenceRelevanceAdmin(admin.ModelAdmin):
    list_display = ("topic", "document", "grade", "source")
    list_filter = ("source", "grade")
    raw_id_fields = ("topic", "document")


@admin.register(ReferenceSensitivity)
class ReferenceSensitivityAdmin(admin.ModelAdmin):
    list_display = ("persona", "topic", "document", "sensitive", "source")
    list_filter = ("persona", "sensitive", "source")
    raw_id_fields = ("topic", "document")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "collection", "created_at", "finished_at", "message")
    list_filter = ("kind", "status")
    readonly_fields = [f.name for f in Job._meta.fields]


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0


@admin.register(AnnotationProject)
class AnnotationProjectAdmin(admin.ModelAdmin):
    list_display = ("name", "collection", "overlap", "double_percent", "created_at")
    prepopulated_fields = {"slug": ("name",)}
    filter_horizontal = ("personas", "topics", "annotators")
    inlines = [RoundInline]


@admin.register(Task)
class TaskAdmin(ReadOnly):
    # Tasks are added only by projects.project_tasks_add, which keeps the batch's counter
    # (BatchCount) in the same transaction; an add, change or delete here would leave the
    # judging page's progress wrong for good.

    list_display = ("id", "project", "round", "topic", "document", "persona", "required", "claimed")
    list_filter = ("project", "round__kind")
    raw_id_fields = ("document", "topic")
    list_select_related = ("project", "round", "topic", "document", "persona")


@admin.register(Assignment)
class AssignmentAdmin(ReadOnly):
    # Leases are written only by the judging services: a task's ``claimed`` counts them
    # under the task's lock (G1), and a lease given back lowers the annotators' claim
    # frontiers (judgments.frontiers_lower). A status changed or a row deleted here would
    # leave the task over-counted or out of every annotator's reach.

    list_display = ("task", "annotator", "status", "leased_at", "expires_at")
    list_filter = ("status",)
    raw_id_fields = ("task",)


class JudgmentVersionInline(admin.TabularInline):
    model = JudgmentVersion
    extra = 0
    can_delete = False
    readonly_fields = [f.name for f in JudgmentVersion._meta.fields]


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "task",
        "annotator",
        "relevance",
        "persona_sensitive",
        "personal_sensitive",
        "active_seconds",
        "version",
        "submitted_at",
    )
    list_filter = ("round", "relevance", "persona_sensitive")
    raw_id_fields = ("task",)
    inlines = [JudgmentVersionInline]

    def has_change_permission(self, request, obj=None):
        # Judgments change only through the annotator's versioned edit.
        return False

    # Judgments are stored only by judgments.judgment_submit, which keeps Task.judged and the
    # annotator's JudgedCount in the same transaction; one added or deleted here would not.
    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    list_display = ("project", "topic", "persona", "document", "relevance", "persona_sensitive")
    list_filter = ("project",)
    raw_id_fields = ("document",)
    readonly_fields = ("decided_by", "decided_at")
