from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import IsAuthenticated

from annotate import api, views
from config.health import health

urlpatterns = [
    path("", views.home, name="home"),
    path("health/", health, name="health"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("collections/", views.collection_list, name="collection-list"),
    path("collections/<slug:slug>/", views.collection_detail, name="collection-detail"),
    path("collections/<slug:slug>/search/", views.search, name="search"),
    path(
        "collections/<slug:slug>/documents/<int:pk>/",
        views.document_detail,
        name="document-detail",
    ),
    path("collections/<slug:slug>/index/", views.index_rebuild, name="index-rebuild"),
    path("import/", views.import_page, name="import"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
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
    path("api/documents/<int:pk>/", api.DocumentDetailApi.as_view(), name="api-document-detail"),
    path("api/personas/", api.PersonaListApi.as_view(), name="api-persona-list"),
    path(
        "api/schema/",
        SpectacularAPIView.as_view(permission_classes=[IsAuthenticated]),
        name="api-schema",
    ),
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api-schema", permission_classes=[IsAuthenticated]
        ),
        name="api-docs",
    ),
    path("admin/", admin.site.urls),
]
