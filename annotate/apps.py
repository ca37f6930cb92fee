from django.apps import AppConfig


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "Collections and annotation"

    def ready(self):
        from annotate import (
            checks,  # noqa: F401 - registers the deployment checks
            tasks,  # noqa: F401 - registers the entry points services queue by name
        )
