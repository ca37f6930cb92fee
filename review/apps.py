from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Search and archivist review"

    def ready(self):
        from annotate import hooks
        from ranking import classifier
        from review import (
            selectors,
            services,
            tasks,  # noqa: F401 - registers the entry points services queue by name
        )

        # The archivists' decisions teach the classifier; ranking does not import review.
        classifier.label_source_add(
            "decisions",
            "Annotations and imported labels, with the archivists' decisions",
            selectors.decision_labels,
        )
        classifier.report_lines_add(selectors.pending_reviews)
        # The publish page's review workload, timed from the decisions.
        classifier.decision_seconds_set(selectors.decision_seconds)
        # Edits, adjudications, imports and exports are logged with the searches; annotate
        # does not import review.
        hooks.audit_record.connect(services.audit)
