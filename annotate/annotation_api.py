"""Annotation APIs: claim the next task, submit (idempotent), list and edit own judgments.

Object-level checks on every operation: a task or judgment that is not the caller's answers
404, exactly like one that does not exist (G6).
"""

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import exports, lead, roles, selectors, services
from annotate.models import AnnotationProject, Answer, Judgment

ANNOTATE = (roles.ANNOTATOR,)


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


def _invalid(serializer, message: str) -> Response:
    return Response(
        {"code": "invalid", "message": message, "fields": serializer.errors}, status=400
    )


def _error(exc: services.AnnotationError) -> Response:
    return Response({"code": exc.code, "message": exc.message, **exc.extra}, status=exc.status)


class _AnswersSerializer(serializers.Serializer):
    relevance = serializers.ChoiceField(choices=[0, 1, 2])
    persona_sensitive = serializers.ChoiceField(choices=Answer.values)
    personal_sensitive = serializers.ChoiceField(choices=Answer.values)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="")

    def answers(self) -> services.Answers:
        d = self.validated_data
        return services.Answers(
            relevance=d["relevance"],
            persona_sensitive=d["persona_sensitive"],
            personal_sensitive=d["personal_sensitive"],
            comment=d["comment"].strip(),
        )


class JudgmentOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.IntegerField(source="task_id")
    round = serializers.IntegerField(source="round_id")
    relevance = serializers.IntegerField()
    persona_sensitive = serializers.CharField()
    personal_sensitive = serializers.CharField()
    comment = serializers.CharField()
    active_seconds = serializers.FloatField()
    started_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    version = serializers.IntegerField()


class TaskNextApi(APIView):
    """Claim the next task of a project (or return the one already held)."""

    required_roles = ANNOTATE

    class OutputSerializer(serializers.Serializer):
        task = serializers.IntegerField(source="task_id")
        expires_at = serializers.DateTimeField()
        topic = serializers.DictField()
        persona = serializers.DictField()
        document = serializers.DictField()

    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("held", int, many=True, description="task ids to skip")],
        responses={200: OutputSerializer, 204: OpenApiResponse(description="no task waiting")},
    )
    def post(self, request, slug):
        project = get_object_or_404(selectors.projects_for_user(request.user), slug=slug)
        held = tuple(int(x) for x in request.query_params.getlist("held") if x.isdigit())
        assignment = services.task_claim(user=request.user, project=project, skip_task_ids=held)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        full = selectors.assignment_for_user(user=request.user, task_id=assignment.task_id)
        t = full.task
        data = {
            "task_id": t.pk,
            "expires_at": full.expires_at,
            "topic": {
                "number": t.topic.number,
                "title": t.topic.title,
                "description": t.topic.description,
                "narrative": t.topic.narrative,
            },
            "persona": {"id": t.persona_id, "name": t.persona.name},
            "document": {
                "id": t.document_id,
                "docid": t.document.docid,
                "subject": t.document.subject,
                "from": t.document.from_header,
                "to": t.document.to_header,
                "date": t.document.date.isoformat() if t.document.date else None,
                "body": t.document.body,
                "attachments": [
                    {"filename": a.filename, "content_type": a.content_type, "text": a.text}
                    for a in t.document.attachments.all()
                ],
            },
        }
        return Response(self.OutputSerializer(data).data)


class JudgmentSubmitApi(APIView):
    """Submit the judgment of a held task. Send an Idempotency-Key header: a retry with the
    same key and body returns the stored judgment (200); the same key with another body is
    refused (422)."""

    required_roles = ANNOTATE

    class InputSerializer(_AnswersSerializer):
        active_seconds = serializers.FloatField(min_value=0, max_value=24 * 3600)
        started_at = serializers.DateTimeField()

    @extend_schema(
        request=InputSerializer,
        parameters=[
            OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=True)
        ],
        responses={
            201: JudgmentOutputSerializer,
            200: JudgmentOutputSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
            422: ErrorSerializer,
        },
    )
    def post(self, request, task_id):
        data = self.InputSerializer(data=request.data)
        if not data.is_valid():
            return _invalid(data, "Invalid answers.")
        try:
            judgment, created = services.judgment_submit(
                user=request.user,
                task_id=task_id,
                idempotency_key=request.headers.get("Idempotency-Key", ""),
                answers=data.answers(),
                active_seconds=data.validated_data["active_seconds"],
                started_at=data.validated_data["started_at"],
            )
        except services.AnnotationError as exc:
            return _error(exc)
        return Response(
            JudgmentOutputSerializer(judgment).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class TaskSkipApi(APIView):
    """Give a held task back, with a reason."""

    required_roles = ANNOTATE

    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=2000)

    @extend_schema(
        request=InputSerializer,
        responses={204: None, 400: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request, task_id):
        data = self.InputSerializer(data=request.data)
        if not data.is_valid():
            return _invalid(data, "A reason is required.")
        try:
            services.task_skip(
                user=request.user, task_id=task_id, reason=data.validated_data["reason"]
            )
        except services.AnnotationError as exc:
            return _error(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)


class JudgmentListApi(APIView):
    """List the caller's own judgments of a project."""

    required_roles = ANNOTATE

    @extend_schema(
        parameters=[
            OpenApiParameter("project", str, required=True),
            OpenApiParameter("topic", int),
        ],
        responses={200: JudgmentOutputSerializer(many=True)},
    )
    def get(self, request):
        project = get_object_or_404(
            selectors.projects_for_user(request.user), slug=request.query_params.get("project")
        )
        topic = request.query_params.get("topic", "")
        qs = selectors.judgments_for_user(
            user=request.user, project=project, topic_id=int(topic) if topic.isdigit() else None
        )
        return Response(JudgmentOutputSerializer(qs[:1000], many=True).data)


class JudgmentEditApi(APIView):
    """Change one of the caller's judgments; ``version`` must be the version being changed."""

    required_roles = ANNOTATE

    class InputSerializer(_AnswersSerializer):
        version = serializers.IntegerField(min_value=1)

    @extend_schema(
        request=InputSerializer,
        responses={
            200: JudgmentOutputSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    def patch(self, request, judgment_id):
        data = self.InputSerializer(data=request.data)
        if not data.is_valid():
            return _invalid(data, "Invalid answers.")
        try:
            judgment = services.judgment_edit(
                user=request.user,
                judgment_id=judgment_id,
                expected_version=data.validated_data["version"],
                answers=data.answers(),
            )
        except services.AnnotationError as exc:
            return _error(exc)
        return Response(JudgmentOutputSerializer(judgment).data)

    @extend_schema(responses={200: JudgmentOutputSerializer, 404: ErrorSerializer})
    def get(self, request, judgment_id):
        judgment = Judgment.objects.filter(pk=judgment_id, annotator=request.user).first()
        if judgment is None:
            return Response({"code": "not_found", "message": "Not found."}, status=404)
        return Response(JudgmentOutputSerializer(judgment).data)


class ProjectProgressApi(APIView):
    """Return judgments done and needed in the project's open rounds, and the caller's count."""

    required_roles = (roles.ANNOTATOR, roles.LEAD)

    class OutputSerializer(serializers.Serializer):
        project_done = serializers.IntegerField()
        project_needed = serializers.IntegerField()
        project_percent = serializers.IntegerField()
        mine = serializers.IntegerField()

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, slug):
        project = get_object_or_404(selectors.projects_for_user(request.user), slug=slug)
        progress = selectors.judging_progress(user=request.user, project=project, task_id=None)
        return Response(self.OutputSerializer(progress).data)


# --- Lead: agreement and exports -----------------------------------------------------------

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
            if not value.isdigit():
                return Response(
                    {"code": "invalid", "message": f"{name} must be an id (a whole number)"},
                    status=status.HTTP_400_BAD_REQUEST,
                )
            filters[f"{name}_id"] = int(value)
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
        kind = EXPORT_TYPES[name[name.rindex(".") :]]
        return HttpResponse(content, content_type=kind)


class ProjectExportListApi(APIView):
    """The names of the project's export files."""

    required_roles = LEAD

    @extend_schema(responses={200: serializers.ListSerializer(child=serializers.CharField())})
    def get(self, request, slug):
        project = get_object_or_404(AnnotationProject, slug=slug)
        return Response(["export.zip", *sorted(exports.export_files(project))])
