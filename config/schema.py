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
