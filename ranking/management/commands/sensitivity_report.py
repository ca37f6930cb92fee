"""Train a persona's sensitivity classifier on a collection and print its report."""

from django.core.management.base import BaseCommand, CommandError

from annotate.management import command_collection
from annotate.models import Persona
from ranking.classifier import ClassifierError, sensitivity_model_train, sources


class Command(BaseCommand):
    help = (
        "Train (and store as the next version) a persona's sensitivity classifier from "
        "annotations, imported labels or category codes; print the cross-validated report."
    )

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True)
        parser.add_argument("--persona", required=True, help="the persona's name")
        parser.add_argument(
            "--create-persona",
            action="store_true",
            help="create the persona if missing (surrogate personas, e.g. a CACM category)",
        )
        parser.add_argument("--source", choices=sources(), default="annotations")
        parser.add_argument(
            "--categories", default="", help="comma-separated codes that stand for sensitive"
        )
        parser.add_argument("--objective", choices=["f1", "f2"], default="f1")

    def handle(self, *args, **opts):
        collection = command_collection(opts["collection"])
        persona = Persona.objects.filter(name=opts["persona"]).first()
        if persona is None:
            if not opts["create_persona"]:
                raise CommandError(f"no persona {opts['persona']!r} (or pass --create-persona)")
            persona = Persona.objects.create(name=opts["persona"])
        categories = [c for c in opts["categories"].split(",") if c.strip()]
        try:
            model = sensitivity_model_train(
                collection=collection,
                persona=persona,
                source=opts["source"],
                categories=categories,
                objective=opts["objective"],
            )
        except ClassifierError as exc:
            raise CommandError(str(exc)) from None
        r = model.report
        out = self.stdout.write
        out(f"{persona.name} on {collection.slug}: version {model.version} ({r['source']})")
        out(
            f"  {r['n']} labelled documents, {r['positives']} sensitive "
            f"({r['positives'] / r['n']:.1%}); {r['features']} features; {model.seconds:.1f} s"
        )
        out(f"  grid search: {r['best_params']}; threshold {r['threshold']:.3f} ({r['objective']})")
        out("  cross-validated (5-fold, out-of-fold predictions at the threshold):")
        for name in ("precision", "recall", "f1", "f2", "accuracy", "balanced_accuracy"):
            out(f"    {name:<18} {r[name]:.3f}")
        out(f"  predicted sensitive: {r['predicted_sensitive']} of {r['documents_scored']}")
        if r.get("warning"):
            out(self.style.WARNING(f"  warning: {r['warning']}"))
        out(
            "  most indicative of sensitive: "
            + ", ".join(f"{n} ({w:+.2f})" for n, w in r["top_sensitive"][:10])
        )
        out(
            "  most indicative of not sensitive: "
            + ", ".join(f"{n} ({w:+.2f})" for n, w in r["top_not_sensitive"][:10])
        )
