"""The lead's API: agreement over a project's annotators and its exports (mirrors the lead's
pages, ``annotate.lead``). Object-level checks as in the annotator's API (G6).
"""

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import exports, lead, roles, selectors
from annotate.judging_api import ErrorSerializer
from annotate.models import AnnotationProject
from core.params import id_param

LEAD = (roles.LEAD,)


class _AgreementSerializer(serializers.Serializer):
    facet = serializers.CharField()
    annotators = serializers.ListField(child=serializers.CharField())
    n = serializers.IntegerField()
    excluded = serializers.IntegerField()
    value = serializers.FloatField(allow_null=True)
    undefined = serializers.CharField(help_text="Why value is null; empty when it is not")
    observed = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    confusion = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))


class _PairSerializer(serializers.Serializer):
    annotators = serializers.ListField(child=serializers.CharField())
    facets = serializers.DictField(child=_AgreementSerializer())


class ProjectAgreementApi(APIView):
    """Agreement of the project's annotators (optionally one round, topic, persona): per
    pair and question, Cohen's kappa with a 95% bootstrap interval; Krippendorff's alpha
    beyond two annotators; the tasks they disagree on."""

    required_roles = LEAD

    class OutputSerializer(serializers.Serializer):
        items = serializers.IntegerField(help_text="Tasks judged by two or more annotators")
        judged_tasks = serializers.IntegerField()
        pairs = _PairSerializer(many=True)
        alpha = serializers.DictField(child=_AgreementSerializer())
        disagreements = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        parameters=[
            OpenApiParameter("round", int, description="a round's id"),
            OpenApiParameter("topic", int, description="a topic's id"),
            OpenApiParameter("persona", int, description="a persona's id"),
        ],
        responses={200: OutputSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def get(self, request, slug):
        project = get_object_or_404(AnnotationProject, slug=slug)
        filters = {}
        for name in ("round", "topic", "persona"):
            value = request.query_params.get(name)
            if value is None:
                continue
            if id_param(value) is None:
                return Response(
                    {"code": "invalid", "message": f"{name} must be an id (a whole number)"},
                    status=status.HTTP_400_BAD_REQUEST,
                )
            filters[f"{name}_id"] = id_param(value)
        report = selectors.agreement_for(project=project, **filters)
        return Response(
            {
                "items": report["items"],
                "judged_tasks": report["judged_tasks"],
                "pairs": [
                    {
                        "annotators": list(p["annotators"]),
                        "facets": {k: v.as_dict() for k, v in p["facets"].items()},
                    }
                    for p in report["pairs"]
                ],
                "alpha": {k: v.as_dict() for k, v in report["alpha"].items()},
                "disagreements": [
                    {
                        "task": d["task"].pk,
                        "topic": d["task"].topic.number,
                        "persona": d["task"].persona.name,
                        "docno": d["task"].document.docid,
                        "judgments": [
                            {
                                "annotator": j.annotator.username,
                                "relevance": j.relevance,
                                "persona_sensitive": j.persona_sensitive,
                                "personal_sensitive": j.personal_sensitive,
                                "comment": j.comment,
                            }
                            for j in d["judgments"]
                        ],
                        "adjudicated": d["adjudication"] is not None,
                    }
                    for d in report["disagreements"]
                ],
            }
        )


EXPORT_TYPES = {
    ".txt": "text/plain; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".jsonl": "application/x-ndjson; charset=utf-8",
    ".png": "image/png",
}


class ProjectExportApi(APIView):
    """One export file: ``qrels.txt``, ``sensitivity-<persona>.txt``, ``annotations.csv``,
    ``annotations.jsonl`` or a chart (``.png``); ``export.zip`` for all of them from one
    snapshot (docs/agreement.md)."""

    required_roles = LEAD

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "machine_labels",
                str,
                enum=["exclude", "include"],
                description="include: hybrid qrels plus machine-labels.txt",
            )
        ],
        responses={
            (200, "text/plain"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "image/png"): OpenApiTypes.BINARY,
            (200, "application/zip"): OpenApiTypes.BINARY,
            400: ErrorSerializer,
            404: ErrorSerializer,
        },
    )
    def get(self, request, slug, name):
        project = get_object_or_404(AnnotationProject, slug=slug)
        machine = request.query_params.get("machine_labels", "exclude")
        if machine not in ("exclude", "include"):
            return Response(
                {"code": "invalid", "message": "machine_labels must be exclude or include"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if name == "export.zip":
            content = exports.export_zip(project, machine_labels=machine == "include")
            lead.export_audit(request.user, project, name, machine == "include")
            return lead.zip_response(project, content)
        files = exports.export_files(
            project, pictures=name.endswith(".png"), machine_labels=machine == "include"
        )
        if name not in files:
            return Response(
                {"code": "not_found", "message": f"no export file {name!r}; see the list"},
                status=status.HTTP_404_NOT_FOUND,
            )
        content = files[name]
        lead.export_audit(request.user, project, name, machine == "include")
        kind = EXPORT_TYPES[name[name.rindex(".") :]]
        return HttpResponse(content, content_type=kind)


class ProjectExportListApi(APIView):
    """The names of the project's export files."""

    required_roles = LEAD

    @extend_schema(responses={200: serializers.ListSerializer(child=serializers.CharField())})
    def get(self, request, slug):
        project = get_object_or_404(AnnotationProject, slug=slug)
        return Response(["export.zip", *sorted(exports.export_files(project))])
