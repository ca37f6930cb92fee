from django.contrib import admin

from ranking.models import MachineLabel


@admin.register(MachineLabel)
class MachineLabelAdmin(admin.ModelAdmin):
    list_display = ("project", "topic", "document", "relevant", "probability", "model_version")
    list_filter = ("project", "model_version")
    raw_id_fields = ("document",)

    def has_change_permission(self, request, obj=None):
        return False  # written by the active-learning engine only
