from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import IsAuthenticated

from annotate import api, judging, judging_api, lead, lead_api, views
from config.health import health
from config.home import home
from config.login import LoginView
from core.params import IdConverter
from ranking import views as ranking_views
from review import certifying, publishing
from review import views as review_views

register_converter(IdConverter, "id")

urlpatterns = [
    path("", home, name="home"),
    path("health/", health, name="health"),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("collections/", views.collection_list, name="collection-list"),
    path("collections/<slug:slug>/", views.collection_detail, name="collection-detail"),
    path("collections/<slug:slug>/search/", ranking_views.search, name="search"),
    path(
        "collections/<slug:slug>/documents/<id:pk>/",
        views.document_detail,
        name="document-detail",
    ),
    path("collections/<slug:slug>/index/", ranking_views.index_rebuild, name="index-rebuild"),
    path("import/", views.import_page, name="import"),
    path("jobs/<id:pk>/", views.job_detail, name="job-detail"),
    # Judging
    path("annotate/", judging.project_list, name="annotate-projects"),
    path("annotate/new/", judging.project_new, name="project-new"),
    path("annotate/<slug:slug>/rounds/", judging.round_new, name="round-new"),
    path("annotate/<slug:slug>/judge/", judging.judge, name="judge"),
    path("annotate/<slug:slug>/judge/next/", judging.next_task, name="judge-next"),
    path("annotate/<slug:slug>/judge/<id:task_id>/", judging.submit, name="judge-submit"),
    path("annotate/<slug:slug>/judge/<id:task_id>/skip/", judging.skip, name="judge-skip"),
    path("annotate/<slug:slug>/judge/<id:task_id>/resume/", judging.resume, name="judge-resume"),
    path("annotate/<slug:slug>/history/", judging.history, name="judging-history"),
    path(
        "annotate/<slug:slug>/judgments/<id:judgment_id>/",
        judging.edit,
        name="judgment-edit",
    ),
    path("annotate/<slug:slug>/dashboard/", judging.dashboard, name="judging-dashboard"),
    path("annotate/<slug:slug>/agreement/", lead.agreement_page, name="agreement"),
    path(
        "annotate/<slug:slug>/agreement/<id:task_id>/adjudicate/",
        lead.adjudicate,
        name="adjudicate",
    ),
    path("annotate/<slug:slug>/export/", lead.export, name="project-export"),
    path("annotate/<slug:slug>/export/qrels.txt", lead.export_qrels, name="project-export-qrels"),
    path("annotate/<slug:slug>/pool/", ranking_views.pool_start, name="project-pool"),
    path("annotate/<slug:slug>/learning/", ranking_views.learning_page, name="learning"),
    path(
        "annotate/<slug:slug>/learning/<id:plan_id>/pause/",
        ranking_views.learning_pause,
        name="learning-pause",
    ),
    path(
        "annotate/<slug:slug>/learning/<id:plan_id>/retrain/",
        ranking_views.learning_retrain,
        name="learning-retrain",
    ),
    path(
        "annotate/<slug:slug>/learning/<id:plan_id>/stopping/",
        ranking_views.learning_stopping,
        name="learning-stopping",
    ),
    path(
        "annotate/<slug:slug>/learning/<id:plan_id>/check-sample/",
        ranking_views.learning_check_sample,
        name="learning-check-sample",
    ),
    path(
        "annotate/<slug:slug>/export/stopping.csv",
        ranking_views.stopping_report_export,
        {"fmt": "csv"},
        name="stopping-report-csv",
    ),
    path(
        "annotate/<slug:slug>/export/stopping.json",
        ranking_views.stopping_report_export,
        {"fmt": "json"},
        name="stopping-report-json",
    ),
    path("collections/<slug:slug>/classifiers/", ranking_views.classifiers, name="classifiers"),
    path(
        "collections/<slug:slug>/topics/<str:number>/seeds/",
        ranking_views.topic_seeds,
        name="topic-seeds",
    ),
    path(
        "collections/<slug:slug>/topics/<str:number>/seeds/<id:document_id>/",
        ranking_views.topic_seed_mark,
        name="topic-seed-mark",
    ),
    path("annotate/<slug:slug>/charts/<slug:name>.png", lead.chart, name="project-chart"),
    # API
    path("api/collections/", api.CollectionListApi.as_view(), name="api-collection-list"),
    path(
        "api/collections/<slug:slug>/",
        api.CollectionDetailApi.as_view(),
        name="api-collection-detail",
    ),
    path(
        "api/collections/<slug:slug>/documents/",
        api.DocumentListApi.as_view(),
        name="api-document-list",
    ),
    path("api/collections/<slug:slug>/topics/", api.TopicListApi.as_view(), name="api-topic-list"),
    path("api/documents/<id:pk>/", api.DocumentDetailApi.as_view(), name="api-document-detail"),
    path("api/personas/", api.PersonaListApi.as_view(), name="api-persona-list"),
    path(
        "api/projects/<slug:slug>/tasks/next/",
        judging_api.TaskNextApi.as_view(),
        name="api-task-next",
    ),
    path(
        "api/tasks/<id:task_id>/judgment/",
        judging_api.JudgmentSubmitApi.as_view(),
        name="api-judgment-submit",
    ),
    path("api/tasks/<id:task_id>/skip/", judging_api.TaskSkipApi.as_view(), name="api-task-skip"),
    path("api/judgments/", judging_api.JudgmentListApi.as_view(), name="api-judgment-list"),
    path(
        "api/judgments/<id:judgment_id>/",
        judging_api.JudgmentEditApi.as_view(),
        name="api-judgment-edit",
    ),
    path(
        "api/projects/<slug:slug>/progress/",
        judging_api.ProjectProgressApi.as_view(),
        name="api-project-progress",
    ),
    path(
        "api/projects/<slug:slug>/agreement/",
        lead_api.ProjectAgreementApi.as_view(),
        name="api-project-agreement",
    ),
    path(
        "api/projects/<slug:slug>/exports/",
        lead_api.ProjectExportListApi.as_view(),
        name="api-project-exports",
    ),
    path(
        "api/projects/<slug:slug>/exports/<str:name>",
        lead_api.ProjectExportApi.as_view(),
        name="api-project-export",
    ),
    path(
        "api/schema/",
        SpectacularAPIView.as_view(permission_classes=[IsAuthenticated]),
        name="api-schema",
    ),
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api-schema",
            permission_classes=[IsAuthenticated],
            template_name="config/api_docs.html",  # with the way back to the app
            # OPTIONS would render DRF's metadata through the Swagger page's template (500)
            http_method_names=["get", "head"],
        ),
        name="api-docs",
    ),
    path("search/", review_views.search_list, name="searcher-home"),
    path("search/<slug:slug>/", review_views.search, name="searcher-search"),
    path(
        "search/<slug:slug>/results/<id:search_id>/",
        review_views.results,
        name="searcher-results",
    ),
    path(
        "search/<slug:slug>/released/<id:search_id>/",
        review_views.released,
        name="searcher-released",
    ),
    path("search/<slug:slug>/documents/<id:pk>/", review_views.document, name="searcher-document"),
    path("review/", review_views.queue, name="review-queue"),
    path("review/audit/", review_views.audit_log, name="audit-log"),
    path("review/loop/<slug:slug>/", review_views.loop_report, name="review-loop"),
    path("review/decisions/", review_views.decisions, name="review-decisions"),
    path("review/group/", review_views.group, name="review-group"),
    path("review/group/decide/", review_views.group_decide, name="review-group-decide"),
    path("review/redactions/", review_views.redactions, name="review-redactions"),
    path("review/lexicons/", views.lexicons, name="review-lexicons"),
    path(
        "review/<id:persona_id>/<id:document_id>/redact/",
        review_views.redact,
        name="review-redact",
    ),
    path(
        "review/<id:persona_id>/<id:document_id>/redact/copies/",
        review_views.redact_copies,
        name="review-redact-copies",
    ),
    path(
        "review/<id:persona_id>/<id:document_id>/redaction/revert/",
        review_views.redaction_revert,
        name="review-redaction-revert",
    ),
    path(
        "review/<id:persona_id>/<id:document_id>/reopen/",
        review_views.reopen,
        name="review-reopen",
    ),
    path("review/publish/<slug:slug>/", publishing.publish, name="review-publish"),
    path("review/audits/<slug:slug>/", certifying.audits, name="release-audits"),
    path("review/audit/<id:audit_id>/judge/", certifying.judge, name="release-audit-judge"),
    path("review/audit/<id:audit_id>/cancel/", certifying.cancel, name="release-audit-cancel"),
    path(
        "review/audit/<id:audit_id>/certificate/",
        certifying.certificate,
        name="release-certificate",
    ),
    path("review/<id:persona_id>/<id:document_id>/", review_views.item, name="review-item"),
    path(
        "review/<id:persona_id>/<id:document_id>/exposure/",
        review_views.exposure_panel,
        name="review-exposure",
    ),
    path(
        "review/documents/<id:document_id>/exposure/",
        review_views.exposure_panel,
        name="review-exposure-document",
    ),
    path(
        "review/<id:persona_id>/<id:document_id>/decide/",
        review_views.decide,
        name="review-decide",
    ),
    path("admin/", admin.site.urls),
]

handler404 = "config.api.not_found"
handler500 = "config.api.server_error"
