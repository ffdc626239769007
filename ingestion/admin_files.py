"""Admin › Ingested documents › Upload files: the staff upload form, beside what it creates.

The same service as ``POST /ingest/files`` (bounded extraction, OCR, one result per file), with
the choices staff make there: collection, visibility, project, date, entity, people, tags.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.template.response import TemplateResponse
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from ingestion import services
from ingestion.sources.files import FILE_TYPES, suffix_of
from ingestion.uploads import uploads_on_disk, use_disk_uploads
from rag.acl import user_hash
from rag.models import Project


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ",".join(sorted(FILE_TYPES))}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = data if isinstance(data, list | tuple) else [data] if data else []
        if not files:
            raise forms.ValidationError("Choose at least one file.")
        limit = settings.KNOWHUB_INGEST_MAX_FILE_BYTES
        if len(files) > settings.KNOWHUB_INGEST_MAX_FILES:
            raise forms.ValidationError(f"At most {settings.KNOWHUB_INGEST_MAX_FILES} files at once.")
        for f in files:
            if f.size > limit:
                raise forms.ValidationError(f"{f.name}: {f.size} bytes; at most {limit} bytes ({limit >> 20} MB).")
            if suffix_of(f.name) not in FILE_TYPES:
                raise forms.ValidationError(f"{f.name}: expected one of {', '.join(sorted(FILE_TYPES))}.")
        return files


def _names(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class UploadFilesForm(forms.Form):
    files = MultipleFileField(help_text="PDF, DOCX, PPTX, HTML, PNG or JPEG; scanned pages are read by OCR.")
    collection = forms.RegexField(regex=r"^[a-z0-9][a-z0-9_\-]{0,63}$", initial="documents")
    visibility = forms.ChoiceField(
        choices=[("public", "public"), ("restricted", "restricted to a project"), ("private", "private to me")],
        initial="public",
    )  # fmt: skip
    project = forms.ModelChoiceField(Project.objects.all(), required=False, to_field_name="slug",
                                     help_text="Only with visibility 'restricted'.")  # fmt: skip
    date = forms.DateField(required=False, help_text="YYYY-MM-DD")
    entity = forms.CharField(required=False, max_length=200)
    people = forms.CharField(required=False, help_text="Comma separated.")
    tags = forms.CharField(required=False, help_text="Comma separated.")

    def clean(self):
        data = super().clean()
        if data.get("visibility") == "restricted" and not data.get("project"):
            self.add_error("project", "Restricted files need a project.")
        if data.get("visibility") != "restricted" and data.get("project"):
            self.add_error("project", "A project is only used with visibility 'restricted'.")
        return data


@csrf_exempt  # the upload handlers must be set before the CSRF check reads the body; checked below
def upload_files_view(model_admin, request):
    use_disk_uploads(request)
    return csrf_protect(_upload_files)(request, model_admin)


def _upload_files(request, model_admin):
    form = UploadFilesForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST" and form.is_valid():
        v = form.cleaned_data
        project = v["project"].slug if v["project"] else None
        try:
            with uploads_on_disk(v["files"]) as uploads:
                result = services.files_ingest(
                    uploads=uploads, collection=v["collection"], project=project, visibility=v["visibility"],
                    owner_hash=user_hash(request.user.pk) if v["visibility"] == "private" else "", date=v["date"],
                    entity=v["entity"], people=_names(v["people"]), tags=_names(v["tags"]), user=request.user,
                )  # fmt: skip
        except services.IngestError as exc:
            form.add_error(None, str(exc))
        else:
            done = sum(f.status == "indexed" for f in result.files)
            level = messages.SUCCESS if done == len(result.files) else messages.WARNING
            model_admin.message_user(request, f"{done} of {len(result.files)} file(s) indexed.", level)
            form = UploadFilesForm(initial={k: request.POST.get(k) for k in ("collection", "visibility")})
    context = {
        **model_admin.admin_site.each_context(request), "form": form, "result": result, "title": "Upload files",
        "opts": model_admin.model._meta,
    }  # fmt: skip
    return TemplateResponse(request, "admin/ingestion/ingesteddocument/upload.html", context)
