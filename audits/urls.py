"""Audit pages, included at /audits/."""

from django.urls import path

from audits import views

app_name = "audits"
urlpatterns = [
    path("", views.campaign_list, name="campaigns"),
    path("new/", views.campaign_create, name="campaign-create"),
    path("mine/", views.mine, name="mine"),
    path("<int:pk>/", views.campaign_detail, name="campaign"),
    path("<int:pk>/start/", views.campaign_start, name="campaign-start"),
    path("<int:pk>/annotators/", views.campaign_annotators, name="campaign-annotators"),
    path("<int:pk>/pilot/", views.campaign_pilot, name="campaign-pilot"),
    path("<int:pk>/label/", views.label, name="label"),
    path("<int:pk>/adjudicate/", views.adjudication_queue, name="campaign-adjudicate"),
    path("<int:pk>/agreement/", views.agreement, name="agreement"),
    path("<int:pk>/judge-accuracy/", views.judge_accuracy, name="judge-accuracy"),
    path("calibrated/<slug:slug>/", views.calibrated, name="calibrated"),
    path("assignments/<int:pk>/label/", views.label_save, name="label-save"),
    path("assignments/<int:pk>/skip/", views.assignment_skip, name="assignment-skip"),
    path("assignments/<int:pk>/release/", views.assignment_release, name="assignment-release"),
    path("assignments/<int:pk>/correct/", views.assignment_correct, name="assignment-correct"),
    path("units/<int:pk>/", views.unit_detail, name="unit"),
    path("units/<int:pk>/text/", views.unit_text, name="unit-text"),
    path("units/<int:pk>/adjudicate/", views.adjudicate, name="adjudicate"),
    path("units/<int:pk>/rewrite/", views.unit_item_rewrite, name="unit-rewrite"),
    path("effect/<slug:slug>/", views.effect, name="effect"),
]
