from django.apps import AppConfig


class RankingConfig(AppConfig):
    name = "ranking"
    verbose_name = "Ranking, indexes and models"

    def ready(self):
        from django.conf import settings

        from annotate import hooks
        from core import lucene
        from ranking import (
            learning_plans,
            learning_queue,
            selectors,
            services,
            tasks,  # noqa: F401 - registers the entry points services queue by name
        )

        lucene.configure(java_home=settings.SASC_JAVA_HOME, heap=settings.SASC_JVM_HEAP)
        # What annotate asks of ranking, by name (annotate/hooks.py; annotate does not
        # import ranking).
        hooks.learning_task_judged.connect(learning_plans.learning_judged)
        hooks.queue_empty.connect(learning_queue.queue_top_up)
        hooks.learning_task_closed.connect(selectors.learning_task_closed)
        hooks.learning_plans.connect(selectors.learning_plans_summary)
        hooks.machine_labels.connect(selectors.machine_labels_list)
        hooks.documents_imported.connect(services.job_index_create)
        hooks.ranked_documents.connect(services.collection_top_documents)
