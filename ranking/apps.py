from django.apps import AppConfig


class RankingConfig(AppConfig):
    name = "ranking"
    verbose_name = "Ranking, indexes and models"

    def ready(self):
        from django.conf import settings

        from core import lucene

        lucene.configure(java_home=settings.SASC_JAVA_HOME, heap=settings.SASC_JVM_HEAP)
        from ranking import tasks  # noqa: F401 - registers the entry points services queue by name
