"""Read APIs: one view per operation, nested output serializers, role checks (G6)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView, RetrieveAPIView

from annotate import roles, selectors

BROWSE = (roles.LEAD, roles.ARCHIVIST)


class CollectionListApi(ListAPIView):
    """List the collections the caller may browse."""

    required_roles = BROWSE

    class OutputSerializer(serializers.Serializer):
        slug = serializers.SlugField()
        name = serializers.CharField()
        kind = serializers.CharField()
        description = serializers.CharField()
        version = serializers.IntegerField()
        indexed_version = serializers.IntegerField(allow_null=True)
        document_count = serializers.IntegerField()
        topic_count = serializers.IntegerField()

    serializer_class = OutputSerializer

    def get_queryset(self):
        return selectors.collections_for_user(self.request.user).order_by("slug")


class CollectionDetailApi(RetrieveAPIView):
    """Return one collection."""

    required_roles = BROWSE
    serializer_class = CollectionListApi.OutputSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return selectors.collections_for_user(self.request.user)


class _AttachmentSerializer(serializers.Serializer):
    filename = serializers.CharField()
    content_type = serializers.CharField()
    size = serializers.IntegerField()
    is_text = serializers.BooleanField()


class DocumentListApi(ListAPIView):
    """List the documents of a collection (headers only)."""

    required_roles = BROWSE

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        docid = serializers.CharField()
        message_id = serializers.CharField()
        subject = serializers.CharField()
        from_header = serializers.CharField()
        date = serializers.DateTimeField(allow_null=True)

    serializer_class = OutputSerializer

    def get_queryset(self):
        collection = get_object_or_404(
            selectors.collections_for_user(self.request.user), slug=self.kwargs["slug"]
        )
        return selectors.documents_for_user(self.request.user, collection=collection).order_by("id")


class DocumentDetailApi(RetrieveAPIView):
    """Return one document with its body and attachments (text of text attachments)."""

    required_roles = BROWSE

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        collection = serializers.CharField(source="collection.slug", read_only=True)
        docid = serializers.CharField()
        message_id = serializers.CharField()
        subject = serializers.CharField()
        from_header = serializers.CharField()
        to_header = serializers.CharField()
        cc_header = serializers.CharField()
        bcc_header = serializers.CharField()
        date = serializers.DateTimeField(allow_null=True)
        body = serializers.CharField()
        body_from_html = serializers.BooleanField()
        decode_problems = serializers.ListField(child=serializers.CharField())
        metadata = serializers.DictField()

        class AttachmentSerializer(_AttachmentSerializer):
            text = serializers.CharField()

        attachments = AttachmentSerializer(many=True)

    serializer_class = OutputSerializer

    def get_queryset(self):
        return selectors.documents_for_user(self.request.user).prefetch_related("attachments")


class TopicListApi(ListAPIView):
    """List the topics of a collection."""

    required_roles = (roles.LEAD, roles.ARCHIVIST, roles.ANNOTATOR)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        number = serializers.CharField()
        title = serializers.CharField()
        description = serializers.CharField()
        narrative = serializers.CharField()

    serializer_class = OutputSerializer

    @extend_schema(summary="List topics of a collection")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return (
            selectors.topics_for_user(self.request.user)
            .filter(collection__slug=self.kwargs["slug"])
            .order_by("number")
        )


class PersonaListApi(ListAPIView):
    """List personas with every field annotators and archivists are shown."""

    required_roles = (roles.LEAD, roles.ARCHIVIST, roles.ANNOTATOR)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()
        nickname = serializers.CharField()
        occupation = serializers.CharField()
        institution = serializers.CharField()
        background = serializers.CharField()
        email_use = serializers.CharField()
        why_it_matters = serializers.CharField()
        audience = serializers.CharField()
        pain_points = serializers.CharField()
        goals = serializers.CharField()

    serializer_class = OutputSerializer

    def get_queryset(self):
        return selectors.personas_for_user(self.request.user).order_by("name")
