from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0005_redaction_reasons_default"),
    ]

    operations = [
        migrations.AddField(
            model_name="redaction",
            name="shows_elsewhere",
            field=models.BooleanField(
                default=False,
                help_text="A person released this document with the words redacted in other "
                "documents of the collection left readable (otherwise they are redacted here too)",
            ),
        ),
    ]
