"""One shape for every API error: ``{"code": ..., "message": ...}`` (plus ``fields`` for a
refused body), the shape the views' own errors have and the schema documents."""

from django.conf import settings
from django.http import JsonResponse
from django.views.defaults import page_not_found
from django.views.defaults import server_error as page_server_error
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.views import exception_handler as drf_exception_handler

from core.params import ID_MAX, id_param


def is_api(request) -> bool:
    """Whether a request is for the JSON API (answered in the API's error shape)."""
    return request.path.startswith("/api/")


def api_error(code: str, message: str, status: int) -> JsonResponse:
    """An error outside DRF's views (Django's 404 / 500, the middleware) in the API's shape."""
    return JsonResponse({"code": code, "message": message}, status=status)


def exception_handler(exc, context):
    """Answer DRF errors in the API's shape, ``{code, message}``."""
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    code = getattr(exc, "default_code", "error")
    if isinstance(data, dict) and "detail" in data and len(data) == 1:
        detail = data["detail"]
        code = getattr(detail, "code", code)
        response.data = {"code": str(code), "message": str(detail)}
    elif isinstance(data, dict | list):  # a validation error: field -> messages
        response.data = {"code": "invalid", "message": "The request was not valid.", "fields": data}
    return response


def not_found(request, exception=None):
    """The site's 404: JSON in the API's error shape under /api/, Django's page elsewhere."""
    if is_api(request):
        return api_error("not_found", "Not found.", 404)
    return page_not_found(request, exception)


def server_error(request):
    """The site's 500: JSON under /api/, Django's page elsewhere."""
    if is_api(request):
        return api_error("server_error", "Something went wrong on our side.", 500)
    return page_server_error(request)


class Pagination(LimitOffsetPagination):
    """``limit``/``offset`` pages of at most ``SASC_API_MAX_PAGE_SIZE`` rows, for every list
    API. A limit or offset that is not a whole number in range is a 400 naming the range:
    DRF's own class quietly served the default page for ``limit=abc`` and any number of rows
    for ``limit=10000000``."""

    @property
    def max_limit(self) -> int:
        return settings.SASC_API_MAX_PAGE_SIZE

    def get_limit(self, request) -> int:
        raw = request.query_params.get(self.limit_query_param)
        if raw is None:
            return self.default_limit
        limit = id_param(raw, maximum=self.max_limit)
        if limit is None or limit < 1:
            raise ValidationError(
                {self.limit_query_param: [f"must be a whole number from 1 to {self.max_limit}"]}
            )
        return limit

    def get_offset(self, request) -> int:
        raw = request.query_params.get(self.offset_query_param)
        if raw is None:
            return 0
        offset = id_param(raw)
        if offset is None:
            raise ValidationError(
                {self.offset_query_param: [f"must be a whole number from 0 to {ID_MAX}"]}
            )
        return offset
