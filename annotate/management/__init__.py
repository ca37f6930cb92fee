"""What the management commands share."""

from django.core.management.base import CommandError


def command_collection(slug: str, *, indexed: bool = False):
    """The collection a command was given by slug (``CommandError`` naming what is missing),
    and with ``indexed`` the promise that it has an index to search."""
    from annotate.models import Collection

    collection = Collection.objects.filter(slug=slug).first()
    if collection is None:
        raise CommandError(f"no collection {slug!r}")
    if indexed and collection.indexed_version is None:
        raise CommandError(f"collection {slug!r} has no index; run build_index {slug}")
    return collection
