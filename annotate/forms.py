from django import forms
from django.conf import settings
from django.utils.text import slugify

from annotate.models import Collection, Persona
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
        if data.get("new_collection"):
            slug = slugify(data["new_collection"])[:100]
            if not slug:
                self.add_error("new_collection", "The name needs at least one letter or digit.")
            elif Collection.objects.filter(slug=slug).exists():
                self.add_error("new_collection", f"A collection with the slug {slug!r} exists.")
            data["new_slug"] = slug
        if data.get("format") == "sensitivity" and not data.get("persona"):
            self.add_error("persona", "Sensitivity labels need a persona.")
        return data


class SearchForm(forms.Form):
    q = forms.CharField(max_length=500, required=False, label="Search")
    page = forms.IntegerField(min_value=1, max_value=50, required=False)
