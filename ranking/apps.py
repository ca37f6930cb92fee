from django.apps import AppConfig


class RankingConfig(AppConfig):
    name = "ranking"
    verbose_name = "Ranking, indexes and models"

    def ready(self):
        from ranking import tasks  # noqa: F401 - registers the entry points services queue by name
