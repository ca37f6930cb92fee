# Plans made before this migration keep AutoTAR's growth (0 documents one at a time); new
# plans retrain after every judged document (None), the default measured in
# docs/active-learning.md, "Screening beside ASReview" (issue 36, item 2).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ranking', '0004_plan_growing_batches'),
    ]

    operations = [
        migrations.AddField(
            model_name='learningplan',
            name='singles',
            field=models.PositiveIntegerField(blank=True, default=0, null=True, help_text='Growing batches: documents judged one at a time first (empty: all)'),
        ),
        migrations.AlterField(
            model_name='learningplan',
            name='singles',
            field=models.PositiveIntegerField(blank=True, default=None, null=True, help_text='Growing batches: documents judged one at a time first (empty: all)'),
        ),
    ]
