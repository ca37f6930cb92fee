"""Count the judging page's progress counters again from the task and judgment rows, and
let every claim walk from its round's start once (the claim frontiers dropped)."""

from django.core.management.base import BaseCommand

from annotate import judgments, projects


class Command(BaseCommand):
    help = (
        "Recount every batch's tasks and judgments needed and every annotator's judgments per "
        "batch from the rows (after rows were written by hand, or after an upgrade to the "
        "counters while processes of the previous version were still running); drop the "
        "claim frontiers, which tasks freed that way did not lower."
    )

    def handle(self, *args, **options):
        off = projects.progress_recount()
        self.stdout.write(
            f"recounted: {off['batches']} batch rows and {off['annotator_batches']} "
            "annotator rows differed"
            if any(off.values())
            else "recounted: every counter was right"
        )
        dropped = judgments.frontiers_reset()
        self.stdout.write(f"claim frontiers dropped: {dropped} (each set again by its next claim)")
