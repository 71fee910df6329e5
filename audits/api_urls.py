"""Audit API routes, included at /api/audits/ by ifportal/urls.py."""

from django.urls import path

from audits import api

app_name = "audits-api"
urlpatterns = [
    path("campaigns/", api.CampaignListView.as_view(), name="campaigns"),
    path("campaigns/<int:pk>/", api.CampaignDetailView.as_view(), name="campaign"),
    path("campaigns/<int:pk>/sample/", api.SampleView.as_view(), name="sample"),
    path("campaigns/<int:pk>/labels/", api.LabelExportView.as_view(), name="labels"),
    path("campaigns/<int:pk>/adjudications/", api.AdjudicationExportView.as_view(), name="adjudications"),
    path("campaigns/<int:pk>/annotators/", api.CampaignAnnotatorsView.as_view(), name="annotators"),
    path("campaigns/<int:pk>/next/", api.NextAssignmentView.as_view(), name="next"),
    path("campaigns/<int:pk>/disagreements/", api.DisagreementListView.as_view(), name="disagreements"),
    path("campaigns/<int:pk>/agreement/", api.AgreementView.as_view(), name="agreement"),
    path("campaigns/<int:pk>/judge-accuracy/", api.JudgeAccuracyView.as_view(), name="judge-accuracy"),
    path("calibrated/<slug:slug>/", api.CalibratedView.as_view(), name="calibrated"),
    path("assignments/<int:pk>/", api.AssignmentView.as_view(), name="assignment"),
    path("assignments/<int:pk>/label/", api.LabelView.as_view(), name="label"),
    path("assignments/<int:pk>/release/", api.ReleaseView.as_view(), name="release"),
    path("units/<int:pk>/", api.UnitView.as_view(), name="unit"),
    path("units/<int:pk>/adjudicate/", api.AdjudicateView.as_view(), name="adjudicate"),
    path("effect/<slug:slug>/", api.EffectView.as_view(), name="effect"),
    path("excluded-items/<slug:slug>/", api.ExcludedItemsView.as_view(), name="excluded-items"),
    path("items/<int:pk>/rewrite/", api.ItemRewriteView.as_view(), name="item-rewrite"),
]
