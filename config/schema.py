"""OpenAPI components named after their view: the house style nests ``InputSerializer`` and
``OutputSerializer`` in each API view (STYLE.md), and drf-spectacular would otherwise give
all of them the one component name "Output", so clients would see one view's fields in
another's responses."""

from drf_spectacular.openapi import AutoSchema


class ViewNamedAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer, direction):
        cls = serializer.__class__
        outer, _, inner = cls.__qualname__.rpartition(".")
        if outer and "<" not in outer:  # nested in a view (not defined in a function)
            return outer.removesuffix("Api").removesuffix("View") + inner
        return super().get_serializer_name(serializer, direction)


ERROR = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "message": {"type": "string"},
        "fields": {"type": "object", "additionalProperties": True},
    },
    "required": ["code", "message"],
}
COMMON = {
    "400": "The request was not valid (the message and, for a body, each field say why)",
    "403": "Not logged in, or the CSRF token is missing",
    "404": "No such object among those this user may see (also for a role without access)",
    "503": "The database is not reachable just now; retry after Retry-After seconds",
}


def error_responses(result, generator, request, public):
    """drf-spectacular postprocessing: every operation documents the errors every API view
    can answer with, in the one shape ``config.api.exception_handler`` gives them."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("Error", ERROR)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, description in COMMON.items():
                responses.setdefault(
                    status,
                    {
                        "description": description,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                        },
                    },
                )
    return result
