"""Audit API (for scripts and tests): campaigns, next assignment, labels, disagreements, adjudication, agreement,
item rewrites.

Every endpoint checks access through audits.access, exactly as the pages do.
"""
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.models import Benchmark, ChecklistItem

from . import access, selectors, services
from .agreement import campaign_agreement
from .serializers import (
    AdjudicationInputSerializer,
    AssignmentSerializer,
    CampaignInputSerializer,
    CampaignSerializer,
    ItemRewriteInputSerializer,
    ItemVersionSerializer,
    LabelInputSerializer,
    LabelSerializer,
    UnitSerializer,
)


def _assignment_body(assignment) -> dict:
    assignment.items = selectors.unit_items(assignment.unit)
    return AssignmentSerializer(assignment).data


class CampaignListView(APIView):
    """Campaigns the user may open; leads create one (started at once unless start=false)."""

    @extend_schema(responses=CampaignSerializer(many=True))
    def get(self, request):
        return Response(CampaignSerializer(access.campaigns_for_user(request.user)[:200], many=True).data)

    @extend_schema(request=CampaignInputSerializer, responses={201: CampaignSerializer})
    def post(self, request):
        access.require_lead(request.user)
        data = CampaignInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        start = values.pop("start")
        try:
            campaign = services.campaign_create(user=request.user, **values)
            if start:
                campaign = services.campaign_start(campaign)
        except services.AuditError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(CampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)


class NextAssignmentView(APIView):
    """Reserve (or return the held) next assignment of the calling annotator; 204 when nothing is left."""

    @extend_schema(request=None, responses={200: AssignmentSerializer, 204: None})
    def post(self, request, pk):
        access.require_annotator(request.user)
        campaign = access.campaign_for_user(request.user, pk)
        assignment = services.assignment_next(campaign, request.user)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(_assignment_body(assignment))


class AssignmentView(APIView):
    """The caller's own assignment (another annotator's answers 404)."""

    @extend_schema(responses=AssignmentSerializer)
    def get(self, request, pk):
        return Response(_assignment_body(access.assignment_for_annotator(request.user, pk)))


class LabelView(APIView):
    """Save the label of the caller's own assignment; saving twice keeps one label."""

    @extend_schema(request=LabelInputSerializer, responses={200: LabelSerializer})
    def post(self, request, pk):
        assignment = access.assignment_for_annotator(request.user, pk)
        data = LabelInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            label = services.label_submit(assignment, data.validated_data["values"], note=data.validated_data["note"],
                                          link=data.validated_data["link"])
        except services.AuditError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(LabelSerializer(label).data)


class UnitView(APIView):
    """A unit with the labels the caller may see (see audits.access)."""

    @extend_schema(responses=UnitSerializer)
    def get(self, request, pk):
        unit = access.unit_for_user(request.user, pk)
        labels = selectors.labels_of_unit(unit)
        if not access.may_see_other_labels(request.user, unit):
            labels = [lab for lab in labels if lab.assignment.annotator_id == request.user.id]
        context = {"labels": labels, "identities": access.may_see_identities(request.user), "user_id": request.user.id}
        return Response(UnitSerializer(unit, context=context).data)


class DisagreementListView(APIView):
    """Disputed units, lowest agreement first, with both labels (leads)."""

    @extend_schema(responses=UnitSerializer(many=True))
    def get(self, request, pk):
        access.require_lead(request.user)
        campaign = access.campaign_for_user(request.user, pk)
        out = [UnitSerializer(u, context={"labels": selectors.labels_of_unit(u), "identities": True,
                                          "user_id": request.user.id}).data
               for u in selectors.adjudication_queue(campaign)]
        return Response(out)


class AdjudicateView(APIView):
    """Record a lead's final status for a disputed unit."""

    @extend_schema(request=AdjudicationInputSerializer, responses={200: UnitSerializer})
    def post(self, request, pk):
        unit = access.unit_for_lead(request.user, pk)
        data = AdjudicationInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.unit_adjudicate(unit, lead=request.user, **data.validated_data)
        except services.AuditError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        unit.refresh_from_db()
        context = {"labels": selectors.labels_of_unit(unit), "identities": True, "user_id": request.user.id}
        return Response(UnitSerializer(unit, context=context).data)


class AgreementView(APIView):
    """Per criterion, per campaign and per stratum: n, agreement, kappa, kappa_ci, alpha, alpha_ci, ac1; per stratum valid
    rates with Wilson intervals and the population estimate."""

    @extend_schema(responses=OpenApiTypes.OBJECT, description=(
        "{criteria: {<name>: {n, annotators, agreement, kappa, kappa_ci, alpha, alpha_ci, ac1, labels, confusion}}, "
        "valid: {...}, per_stratum: {<stratum>: {<name>: {...}}}, strata: [{stratum, population, sampled, decided, valid, "
        "rate, wilson}], population_estimate: {rate, interval, covered_share}}; fractions in [0, 1] (METRICS.md section 6). "
        "kappa: first two labels of a unit; alpha (nominal, 95% bootstrap interval over units) and Gwet's AC1: every "
        "label. Leads and reviewers only."))
    def get(self, request, pk):
        campaign = access.campaign_for_user(request.user, pk)
        if not access.can_see_all(request.user):
            access.require_lead(request.user)
        return Response(agreement_body(campaign_agreement(campaign)))


def _interval(pair) -> list | None:
    return list(pair) if pair else None


def _criterion_body(c) -> dict:
    return {"n": c.n, "annotators": c.annotators, "agreement": c.agreement, "kappa": c.kappa,
            "kappa_ci": _interval(c.kappa_ci), "alpha": c.alpha, "alpha_ci": _interval(c.alpha_ci), "ac1": c.ac1,
            "labels": c.labels, "confusion": c.confusion}


def agreement_body(figures) -> dict:
    """The agreement figures of a campaign as the API gives them."""
    return {
        "criteria": {c.criterion: _criterion_body(c) for c in figures.criteria},
        "valid": _criterion_body(figures.valid_agreement),
        "per_stratum": {s: {c.criterion: _criterion_body(c) for c in criteria} for s, criteria in figures.per_stratum.items()},
        "strata": [{"stratum": r.stratum, "population": r.population, "sampled": r.sampled, "decided": r.decided,
                    "valid": r.valid, "rate": r.rate, "wilson": _interval(r.interval)} for r in figures.rates],
        "population_estimate": {"rate": figures.estimate.rate, "interval": _interval(figures.estimate.interval),
                                "covered_share": figures.estimate.covered_share},
    }


class ExcludedItemsView(APIView):
    """Item ids an exclusion policy leaves out of a benchmark's leaderboard."""

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[
        OpenApiParameter("exclude", str, enum=list(selectors.POLICIES), required=True)],
        description="{benchmark, exclude, items: [checklist item ids]}")
    def get(self, request, slug):
        benchmark = get_object_or_404(Benchmark, slug=slug)
        policy = request.query_params.get("exclude", "")
        if policy not in selectors.POLICIES:
            return Response({"exclude": [f"one of {', '.join(selectors.POLICIES)}"]}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"benchmark": slug, "exclude": policy,
                         "items": sorted(selectors.excluded_item_ids(benchmark, policy))})


class ItemRewriteView(APIView):
    """Rewrite a checklist item as a new version `<key>@v<n>` that supersedes it (leads; only the newest version, once)."""

    @extend_schema(request=ItemRewriteInputSerializer, responses={201: ItemVersionSerializer, 400: None, 409: None})
    def post(self, request, pk):
        access.require_lead(request.user)
        item = get_object_or_404(ChecklistItem, pk=pk)
        data = ItemRewriteInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        unit_id = values.pop("unit")
        unit = access.unit_for_lead(request.user, unit_id) if unit_id else None
        try:
            new = services.item_rewrite(item=item, lead=request.user, unit=unit, **values)
        except services.ItemAlreadyRewritten as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except services.AuditError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(ItemVersionSerializer(new).data, status=status.HTTP_201_CREATED)
