"""Top-level routes: each app contributes its own ``urls.py``."""


from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from identity import views as identity_views
from rag.apis import HealthApi
from rag.views import ask_page, document_page

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", identity_views.LogoutView.as_view(), name="logout"),  # ends the provider's session too
    path("", include("identity.urls")),  # /oidc/authenticate/, /oidc/callback/, /account/tokens/
    path("health", HealthApi.as_view(), name="health"),
    path("", include("ingestion.urls")),  # /notion/ingest, /ingest/documents, /rag/reindex
    path("rag/", include("feedback.urls")),  # /rag/feedback, /rag/feedback/click
    path("rag/", include("rag.urls")),
    path("sessions/", include("sessions.urls")),
    path("learn/", include("sessions.page_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view loads its start-up script from a URL of its own: no inline script under the CSP.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("documents/<path:chunk_uid>/", document_page, name="document-page"),
    path("", ask_page, name="ask-page"),
]

handler400 = "knowhub.views.bad_request"
handler403 = "knowhub.views.permission_denied"
handler404 = "knowhub.views.not_found"
handler500 = "knowhub.views.server_error"
