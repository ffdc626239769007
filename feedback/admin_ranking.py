"""Ranking configurations in the admin: how one is made ("Fit from judgments", or
``manage.py tune_ranking``), what the active one changed, how to go back."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from feedback import services
from feedback.models import Interaction, RankingConfig
from feedback.ranking import RankingWeights

# --- ranking configurations -------------------------------------------------------------------


def weights_change(weights: dict | None, reference: dict) -> list[str]:
    """Each weight that differs from ``reference``, as "title match 0 → 0.4"."""
    out = []
    for name, value in (weights or {}).items():
        if not isinstance(value, int | float):
            continue
        before = reference.get(name, 0.0)
        if abs(value - before) > 1e-9:
            out.append(f"{WEIGHT_NAMES.get(name, name)} {before:g} → {value:g}")
    return out


# The fusion's weights in words (the stored names are w_vec, w_txt, …).
WEIGHT_NAMES = {
    "w_vec": "meaning (vector) score", "w_txt": "keyword (text) score", "w_title": "title match",
    "w_recency": "recency", "w_judgment": "judgment balance",
}


@admin.register(RankingConfig)
class RankingConfigAdmin(admin.ModelAdmin):
    """Every tuned configuration, active or not; the page says how one is made ("Fit from
    judgments" here, or ``manage.py tune_ranking``), what the active one changed, and how to go back."""

    change_list_template = "admin/feedback/rankingconfig/change_list.html"

    list_display = (
        "id", "active", "weights_summary", "validation", "folds_summary", "note", "created_by", "created_at",
        "activated_at",
    )  # fmt: skip
    list_filter = ("active",)
    fields = (
        "active", "feature_table", "fold_table", "weights", "metrics", "note", "created_by", "created_at",
        "activated_at",
    )  # fmt: skip
    readonly_fields = (
        "active", "feature_table", "fold_table", "weights", "metrics", "created_by", "created_at", "activated_at",
    )  # fmt: skip
    actions = ["restore", "use_static_hybrid"]

    def has_add_permission(self, request):
        return False  # configurations are fitted from judgments ("Fit from judgments", tune_ranking)

    def add_view(self, request, form_url="", extra_context=None):
        """Nothing to type in: a configuration is fitted; the list page says how."""
        self.message_user(
            request, "Ranking configurations are fitted from the judgments: use “Fit from judgments”.", messages.INFO
        )
        return HttpResponseRedirect(reverse("admin:feedback_rankingconfig_changelist"))

    def get_urls(self):
        return [
            path("fit/", self.admin_site.admin_view(self.fit_view), name="feedback_rankingconfig_fit"),
            *super().get_urls(),
        ]

    def fit_view(self, request):
        """Fit the weights on the judgments (what ``manage.py tune_ranking`` does), POST only."""
        if request.method != "POST" or not self.has_change_permission(request):
            return HttpResponseRedirect(reverse("admin:feedback_rankingconfig_changelist"))
        from feedback.tuning import ranking_tune

        report = ranking_tune(user=request.user)
        level = {"activated": messages.SUCCESS, "rejected": messages.WARNING}.get(report.status, messages.INFO)
        text = {
            "activated": f"Fitted and activated configuration #{report.config_id}: {report.message}.",
            "rejected": f"Fitted configuration #{report.config_id}, not activated: {report.message}. "
            "You can still make it active with the action below.",
            "not_enough_data": f"Nothing fitted: {report.message}. Label more answers in the review queue.",
            "unchanged": f"Nothing fitted: {report.message}.",
        }.get(report.status, report.message)
        self.message_user(request, text, level)
        return HttpResponseRedirect(reverse("admin:feedback_rankingconfig_changelist"))

    def changelist_view(self, request, extra_context=None):
        active = RankingConfig.objects.filter(active=True).first()
        defaults = RankingWeights.default().as_dict()
        context = {
            "active_config": active,
            "active_changes": weights_change(active.weights, defaults) if active else [],
            "active_validation": ((active.metrics or {}).get("validation") or {}) if active else {},
            "can_fit": self.has_change_permission(request),
            "queue_url": reverse("admin:feedback_interaction_changelist")
            if request.user.has_perm("feedback.view_interaction") else None,
            "labelled_interactions": Interaction.objects.filter(judgments__isnull=False).distinct().count(),
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context=context)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # history is kept
        return actions

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="weights")
    def weights_summary(self, obj):
        w = obj.weights or {}
        return ", ".join(f"{k.removeprefix('w_')} {v:g}" for k, v in w.items() if isinstance(v, int | float))

    @admin.display(description="validation nDCG@10 before → after")
    def validation(self, obj):
        v = (obj.metrics or {}).get("validation") or {}
        if "before" not in v:
            return "–"
        return format_html("{} → <b>{}</b>", v["before"], v["after"])

    @admin.display(description="held-out folds")
    def folds_summary(self, obj):
        folds = (obj.metrics or {}).get("folds") or []
        if not folds:
            return "–"
        won = sum(1 for f in folds if f["after"] > f["before"])
        worst = min(f["after"] - f["before"] for f in folds)
        return f"gain on {won}/{len(folds)} (worst {worst:+.4f})"

    @admin.display(description="weights and confidence")
    def feature_table(self, obj):
        """Each weight next to the defaults and to what the cross-validation folds chose: a weight
        every fold moved the same way is one to trust; a wide spread says the data is thin."""
        weights = obj.weights or {}
        features = (obj.metrics or {}).get("features") or {}
        defaults = RankingWeights.default().as_dict()
        rows = []
        order = list(defaults)  # the fields' order (the stored JSON comes back key-sorted)
        for name, value in sorted(
            weights.items(), key=lambda kv: (kv[0] not in order, order.index(kv[0]) if kv[0] in order else 0)
        ):
            f = features.get(name) or {}
            agreement = f.get("agreement")
            if agreement is None:
                confidence = "not cross-validated"
            else:
                level = "high" if agreement >= 0.99 else "medium" if agreement >= 0.6 else "low"
                confidence = f"{level}: {agreement:.0%} of folds agree"
            spread = (
                f"{f['fold_mean']:g} ± {f['fold_sd']:g}" if "fold_mean" in f else "–"
            )
            rows.append((name.removeprefix("w_"), f"{value:g}", f"{defaults.get(name, 0.0):g}", spread, confidence))
        return format_html(
            "<table class='ranking-features'><thead><tr><th>feature</th><th>weight</th><th>default</th>"
            "<th>folds (mean ± sd)</th><th>confidence</th></tr></thead><tbody>{}</tbody></table>",
            format_html_join("", "<tr><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="held-out folds")
    def fold_table(self, obj):
        folds = (obj.metrics or {}).get("folds") or []
        if not folds:
            return "–"
        rows = [
            (f["fold"], f["validation"], f["before"], f["after"], f"{f['after'] - f['before']:+.4f}")
            for f in folds
        ]
        return format_html(
            "<table class='ranking-folds'><thead><tr><th>fold</th><th>held-out queries</th>"
            "<th>nDCG@10 before</th><th>after</th><th>gain</th></tr></thead><tbody>{}</tbody></table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.action(description="Make the selected configuration the active one")
    def restore(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one configuration to restore.", level=messages.ERROR)
            return
        config = queryset.get()
        try:
            services.ranking_config_activate(config=config, user=request.user)
        except ValueError as exc:
            self.message_user(request, f"Cannot activate #{config.pk}: {exc}", level=messages.ERROR)
            return
        self.message_user(request, f"Ranking configuration #{config.pk} is active.")

    @admin.action(description="Go back to the static hybrid (no configuration active)")
    def use_static_hybrid(self, request, queryset):
        services.ranking_config_deactivate_all(user=request.user)
        self.message_user(request, "No ranking configuration is active: search uses the settings' weights.")
