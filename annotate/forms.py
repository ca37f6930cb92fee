from django import forms
from django.conf import settings
from django.utils.text import slugify

from annotate.models import AnnotationProject, Collection, Persona
from annotate.services import IMPORT_FORMATS


class ImportForm(forms.Form):
    """Upload one file into an existing or a new collection."""

    collection = forms.ModelChoiceField(
        queryset=Collection.objects.all(),
        required=False,
        help_text="Leave empty and give a name below to create a new collection.",
    )
    new_collection = forms.CharField(max_length=200, required=False, label="New collection name")
    new_kind = forms.ChoiceField(
        choices=Collection.Kind.choices, initial=Collection.Kind.EMAIL, label="New collection kind"
    )
    format = forms.ChoiceField(choices=list(IMPORT_FORMATS.items()))
    persona = forms.ModelChoiceField(
        queryset=Persona.objects.all(),
        required=False,
        help_text="Only for sensitivity labels.",
    )
    file = forms.FileField()

    def clean_file(self):
        upload = self.cleaned_data["file"]
        limit = settings.SASC_MAX_IMPORT_FILE_BYTES
        if upload.size > limit:
            raise forms.ValidationError(
                f"{upload.name} is {upload.size / 1048576:.1f} MB; the limit is "
                f"{limit / 1048576:.0f} MB. Split it, or import it with manage.py import_data."
            )
        return upload

    def clean(self):
        data = super().clean()
        named = (data.get("new_collection") or "").strip()
        if not data.get("collection") and not named and data.get("format") != "personas":
            self.add_error(None, "Choose a collection or name a new one.")
        if named and data.get("format") == "personas":
            # Personas belong to no collection: a name here made an empty collection.
            self.add_error(
                "new_collection",
                "Personas are shared by every collection: leave the new collection name empty.",
            )
        elif data.get("new_collection"):
            slug = slugify(data["new_collection"])[:100]
            if not slug:
                self.add_error("new_collection", "The name needs at least one letter or digit.")
            elif Collection.objects.filter(slug=slug).exists():
                self.add_error("new_collection", f"A collection with the slug {slug!r} exists.")
            data["new_slug"] = slug
        if data.get("format") == "sensitivity" and not data.get("persona"):
            self.add_error("persona", "Sensitivity labels need a persona.")
        return data


# Free text and lists a form takes in one go (issue 21: nothing bounded them but the 5 MB
# request body, and a million "topic docid" lines became one query with a million ids).
MAX_TASK_LINES = 5_000
MAX_GUIDELINES = 20_000


class TasksForm(forms.Form):
    """Where a round's tasks come from."""

    SOURCES = [
        ("search", "Top results of a BM25 search with each topic's title"),
        ("list", "An explicit list of 'topic docid' lines"),
        ("reference", "The documents of the collection's imported qrels, per topic"),
        ("reference-relevant", "The relevant documents of the imported qrels, per topic"),
    ]
    source = forms.ChoiceField(choices=SOURCES, initial="search")
    k = forms.IntegerField(min_value=1, max_value=1000, initial=20, label="Results per topic")
    lines = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        label="Topic docid lines",
        max_length=MAX_TASK_LINES * 300,
        help_text=f"At most {MAX_TASK_LINES:,} lines at a time.",
    )
    topics = forms.ModelMultipleChoiceField(
        queryset=None, required=False, help_text="Only these topics (none chosen: all)"
    )
    personas = forms.ModelMultipleChoiceField(
        queryset=None, required=False, help_text="Only these personas (none chosen: all)"
    )

    def __init__(self, *args, project=None, **kwargs):
        """``project``: offer its topics and personas (a new project: every one)."""
        from annotate.models import Topic

        super().__init__(*args, **kwargs)
        self.fields["topics"].queryset = (
            project.topics.all() if project else Topic.objects.all()
        ).order_by("collection_id", "number")
        self.fields["personas"].queryset = (
            project.personas.all() if project else Persona.objects.all()
        ).order_by("name")

    def clean(self):
        data = super().clean()
        lines = [line for line in (data.get("lines") or "").splitlines() if line.strip()]
        if data.get("source") == "list" and not lines:
            self.add_error("lines", "Give at least one 'topic docid' line.")
        if len(lines) > MAX_TASK_LINES:
            self.add_error(
                "lines",
                f"{len(lines):,} lines: at most {MAX_TASK_LINES:,} at a time. Split them, or "
                "import them as a qrels file and use the reference source.",
            )
        return data


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    collection = forms.ModelChoiceField(queryset=Collection.objects.all())
    topics = forms.ModelMultipleChoiceField(queryset=None)
    personas = forms.ModelMultipleChoiceField(queryset=Persona.objects.all())
    annotators = forms.ModelMultipleChoiceField(queryset=None)
    overlap = forms.IntegerField(min_value=1, max_value=20, initial=1)
    double_percent = forms.IntegerField(
        min_value=0, max_value=100, initial=0, label="Percent double-judged (overlap 1)"
    )
    round_kind = forms.ChoiceField(
        choices=[("training", "Training"), ("production", "Production")],
        initial="production",
        label="First round",
    )
    lease_minutes = forms.IntegerField(min_value=1, max_value=24 * 60, initial=30)
    relevance_rule = forms.ChoiceField(
        choices=AnnotationProject.RelevanceRule.choices,
        initial=AnnotationProject.RelevanceRule.HIGHER,
        label="Exported grade when annotators disagree (unless adjudicated)",
    )
    guidelines = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}), required=False, max_length=MAX_GUIDELINES
    )

    def __init__(self, *args, **kwargs):
        from django.contrib.auth.models import User

        from annotate.models import Topic
        from annotate.roles import ANNOTATOR

        super().__init__(*args, **kwargs)
        self.fields["topics"].queryset = Topic.objects.select_related("collection")
        self.fields["annotators"].queryset = User.objects.filter(
            groups__name=ANNOTATOR, is_active=True
        ).order_by("username")

    def clean(self):
        data = super().clean()
        collection, topics = data.get("collection"), data.get("topics")
        if collection and topics:
            strangers = [t.number for t in topics if t.collection_id != collection.pk]
            if strangers:
                self.add_error("topics", f"Not in {collection}: {', '.join(strangers)}")
        return data
