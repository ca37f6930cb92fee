"""One shape for every API error: ``{"code": ..., "message": ...}`` (plus ``fields`` for a
refused body), the shape the views' own errors have and the schema documents."""

from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
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
    from django.http import JsonResponse
    from django.views.defaults import page_not_found

    if request.path.startswith("/api/"):
        return JsonResponse({"code": "not_found", "message": "Not found."}, status=404)
    return page_not_found(request, exception)


def server_error(request):
    """The site's 500: JSON under /api/, Django's page elsewhere."""
    from django.http import JsonResponse
    from django.views.defaults import server_error as page_server_error

    if request.path.startswith("/api/"):
        return JsonResponse(
            {"code": "server_error", "message": "Something went wrong on our side."}, status=500
        )
    return page_server_error(request)
