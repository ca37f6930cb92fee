"""Count the judging page's progress counters again from the task and judgment rows."""

from django.core.management.base import BaseCommand

from annotate import projects


class Command(BaseCommand):
    help = (
        "Recount every batch's tasks and judgments needed and every annotator's judgments per "
        "batch from the rows (after rows were written by hand, or after an upgrade to the "
        "counters while processes of the previous version were still running)."
    )

    def handle(self, *args, **options):
        off = projects.progress_recount()
        self.stdout.write(
            f"recounted: {off['batches']} batch rows and {off['annotator_batches']} "
            "annotator rows differed"
            if any(off.values())
            else "recounted: every counter was right"
        )
