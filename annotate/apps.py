from django.apps import AppConfig


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "Collections and annotation"

    def ready(self):
        from config import checks  # noqa: F401 - registers the deployment checks
