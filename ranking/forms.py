"""Forms of the active-learning pages."""

from django import forms

from ranking.models import LearningPlan


class LearningPlanForm(forms.Form):
    """Start active learning for some topics of a project (one plan per topic)."""

    topics = forms.ModelMultipleChoiceField(queryset=None, help_text="One plan per topic")
    strategy = forms.ChoiceField(choices=LearningPlan.Strategy.choices, initial="cal")
    seed_mode = forms.ChoiceField(choices=LearningPlan.SeedMode.choices, initial="is")
    candidates = forms.ChoiceField(choices=LearningPlan.Candidates.choices, initial="pool")
    growing = forms.BooleanField(
        required=False,
        initial=True,
        label="Screening order (CAL, retrained after each document)",
        help_text="Without a batch size: retrained after every judged document, one queued "
        "ahead; with one: AutoTAR's growing batches, that size then +ceil(B/10)",
    )
    batch_size = forms.IntegerField(min_value=1, max_value=10_000, required=False)
    batch_percent = forms.IntegerField(
        min_value=1, max_value=100, required=False, label="or batch as % of candidates"
    )
    budget = forms.IntegerField(
        min_value=1, max_value=1_000_000, initial=100, help_text="Documents judged, seeds included"
    )
    retrain_every = forms.IntegerField(
        min_value=1,
        max_value=10_000,
        required=False,
        help_text="Judged documents (default: a batch)",
    )
    random_seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31 - 1)
    rds_system = forms.ChoiceField(choices=(), initial="bm25.title", label="RDS system")
    rds_min_relevant = forms.IntegerField(
        min_value=1, max_value=100, initial=1, label="Seeds: relevant"
    )
    rds_min_nonrelevant = forms.IntegerField(
        min_value=1, max_value=100, initial=1, label="Seeds: non-relevant"
    )
    rds_max = forms.IntegerField(
        min_value=2, max_value=10_000, initial=100, label="RDS gives up after"
    )
    sensitivity_persona = forms.ModelChoiceField(
        queryset=None, required=False, help_text="For the sensitivity strategy"
    )

    def __init__(self, *args, project, **kwargs):
        from ranking.pooling import SYSTEMS

        super().__init__(*args, **kwargs)
        self.fields["topics"].queryset = project.topics.order_by("number")
        self.fields["sensitivity_persona"].queryset = project.personas.order_by("name")
        self.fields["rds_system"].choices = [(s.name, s.name) for s in SYSTEMS]

    def clean(self):
        data = super().clean()
        size, percent = data.get("batch_size"), data.get("batch_percent")
        if data.get("growing"):
            if percent is not None:
                raise forms.ValidationError(
                    "Growing batches start from a batch size, not a percentage: "
                    "clear the percentage or untick growing batches."
                )
        elif (size is None) == (percent is None):
            raise forms.ValidationError(
                "Give either a batch size or a batch percentage (or tick growing batches)."
            )
        return data


class TopicForm(forms.Form):
    """The topic being written or refined while searching for seeds."""

    title = forms.CharField(max_length=2000)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    narrative = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


class ClassifierForm(forms.Form):
    """Train a persona's sensitivity classifier over the collection (a worker job)."""

    persona = forms.ModelChoiceField(queryset=None)
    source = forms.ChoiceField(choices=[])
    categories = forms.CharField(
        required=False, max_length=500, help_text="Comma-separated codes (surrogate source)"
    )
    objective = forms.ChoiceField(
        choices=[("f1", "Threshold for F1"), ("f2", "Threshold for F2 (favours recall)")]
    )

    def __init__(self, *args, **kwargs):
        from annotate.models import Persona
        from ranking.classifier import TITLES, sources

        super().__init__(*args, **kwargs)
        self.fields["persona"].queryset = Persona.objects.order_by("name")
        self.fields["source"].choices = [(s, TITLES[s]) for s in sources()]

    def clean(self):
        data = super().clean()
        if data.get("source") == "categories" and not data.get("categories", "").strip():
            raise forms.ValidationError("Give the category codes that stand for sensitive.")
        return data


class SearchForm(forms.Form):
    """A collection's search box (a lead's or an archivist's)."""

    q = forms.CharField(max_length=500, required=False, label="Search")
    page = forms.IntegerField(min_value=1, max_value=50, required=False)
