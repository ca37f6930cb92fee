"""The annotator's API: claim the next task, submit (idempotent), skip, list and edit own
judgments, progress (mirrors the judging pages, ``annotate.judging``).

Object-level checks on every operation: a task or judgment that is not the caller's answers
404, exactly like one that does not exist (G6).
"""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import judgments, roles, selectors
from annotate.models import Answer, Judgment
from core.params import id_param, id_params

ANNOTATE = (roles.ANNOTATOR,)


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


def invalid_response(serializer, message: str) -> Response:
    """Answer 400 with the serializer's field errors under ``message``."""
    return Response(
        {"code": "invalid", "message": message, "fields": serializer.errors}, status=400
    )


def error_response(exc: judgments.AnnotationError) -> Response:
    """Answer an annotation error with its code, message and HTTP status."""
    return Response({"code": exc.code, "message": exc.message, **exc.extra}, status=exc.status)


class _AnswersSerializer(serializers.Serializer):
    relevance = serializers.ChoiceField(choices=[0, 1, 2])
    persona_sensitive = serializers.ChoiceField(choices=Answer.values)
    personal_sensitive = serializers.ChoiceField(choices=Answer.values)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="")

    def answers(self) -> judgments.Answers:
        d = self.validated_data
        return judgments.Answers(
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
        held = id_params(request.query_params.getlist("held"))
        assignment = judgments.task_claim(user=request.user, project=project, skip_task_ids=held)
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
            return invalid_response(data, "Invalid answers.")
        try:
            judgment, created = judgments.judgment_submit(
                user=request.user,
                task_id=task_id,
                idempotency_key=request.headers.get("Idempotency-Key", ""),
                answers=data.answers(),
                active_seconds=data.validated_data["active_seconds"],
                started_at=data.validated_data["started_at"],
            )
        except judgments.AnnotationError as exc:
            return error_response(exc)
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
            return invalid_response(data, "A reason is required.")
        try:
            judgments.task_skip(
                user=request.user, task_id=task_id, reason=data.validated_data["reason"]
            )
        except judgments.AnnotationError as exc:
            return error_response(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)


class JudgmentListApi(ListAPIView):
    """List the caller's own judgments of a project, a page at a time (``limit``/``offset``,
    at most ``SASC_API_MAX_PAGE_SIZE``, with the total ``count`` and the ``next`` page's link;
    the default paginator, ``config.api.Pagination``)."""

    required_roles = ANNOTATE
    serializer_class = JudgmentOutputSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("project", str, required=True),
            OpenApiParameter("topic", int),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        params = self.request.query_params
        project = get_object_or_404(
            selectors.projects_for_user(self.request.user), slug=params.get("project")
        )
        return selectors.judgments_for_user(
            user=self.request.user, project=project, topic_id=id_param(params.get("topic", ""))
        )


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
            return invalid_response(data, "Invalid answers.")
        try:
            judgment = judgments.judgment_edit(
                user=request.user,
                judgment_id=judgment_id,
                expected_version=data.validated_data["version"],
                answers=data.answers(),
            )
        except judgments.AnnotationError as exc:
            return error_response(exc)
        return Response(JudgmentOutputSerializer(judgment).data)

    @extend_schema(responses={200: JudgmentOutputSerializer, 404: ErrorSerializer})
    def get(self, request, judgment_id):
        judgment = Judgment.objects.filter(pk=judgment_id, annotator=request.user).first()
        if judgment is None:
            return Response({"code": "not_found", "message": "Not found."}, status=404)
        return Response(JudgmentOutputSerializer(judgment).data)


class ProjectProgressApi(APIView):
    """Return judgments done and needed in the project's open rounds, and the caller's count.
    Judgments needed = tasks + extra judgments (of tasks judged by more than one annotator)."""

    required_roles = (roles.ANNOTATOR, roles.LEAD)

    class OutputSerializer(serializers.Serializer):
        project_done = serializers.IntegerField()
        project_needed = serializers.IntegerField()
        project_percent = serializers.IntegerField()
        project_tasks = serializers.IntegerField()
        project_extra = serializers.IntegerField()
        mine = serializers.IntegerField()

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, slug):
        project = get_object_or_404(selectors.projects_for_user(request.user), slug=slug)
        progress = selectors.judging_progress(user=request.user, project=project, task_id=None)
        return Response(self.OutputSerializer(progress).data)
