"""Audit API (for scripts and tests): campaigns, next assignment, labels, disagreements, adjudication, agreement,
item rewrites.

Every endpoint checks access through audits.access, exactly as the pages do.
"""

import csv
import io

from django.db.models import Count
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import renderers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from audits import access, calibration, exports, sampling, selectors, services
from audits.agreement import campaign_agreement
from audits.models import Subject
from audits.serializers import (
    AdjudicationInputSerializer,
    AnnotatorsInputSerializer,
    AssignmentSerializer,
    CampaignInputSerializer,
    CampaignSerializer,
    ItemRewriteInputSerializer,
    ItemSerializer,
    ItemVersionSerializer,
    LabelInputSerializer,
    LabelSerializer,
    UnitSerializer,
)
from runs.access import blind_safe
from runs.api.verdicts import CSVRenderer
from runs.exclusions import exclusion_policy_unknown
from runs.metrics.checklist import Filters
from runs.models import Benchmark, BenchmarkKind, ChecklistItem
from runs.pages import csv_safe


def _assignment_body(assignment) -> dict:
    assignment.items = selectors.unit_items(assignment.unit)
    body = AssignmentSerializer(assignment).data
    body["stratum"] = access.stratum_for(assignment.annotator, assignment.unit)
    return body


@blind_safe
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


@blind_safe
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


class CampaignAnnotatorsView(APIView):
    """A lead chooses who receives the campaign's units (usernames; [] opens it to every annotator)."""

    @extend_schema(request=AnnotatorsInputSerializer, responses=CampaignSerializer)
    def post(self, request, pk):
        access.require_lead(request.user)
        campaign = access.campaign_for_user(request.user, pk)
        data = AnnotatorsInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.campaign_assign(campaign, data.validated_data["annotators"])
        except services.AuditError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(CampaignSerializer(campaign).data)


@blind_safe  # an annotator puts back the unit they hold
class ReleaseView(APIView):
    """Put the caller's held unit back: free for others at once, last in the caller's queue (skip = release, then next)."""

    @extend_schema(request=None, responses={204: None, 409: None})
    def post(self, request, pk):
        assignment = access.assignment_for_annotator(request.user, pk)
        try:
            services.assignment_release(assignment)
        except services.AuditError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)


@blind_safe
class AssignmentView(APIView):
    """The caller's own assignment (another annotator's answers 404)."""

    @extend_schema(responses=AssignmentSerializer)
    def get(self, request, pk):
        return Response(_assignment_body(access.assignment_for_annotator(request.user, pk)))


@blind_safe
class LabelView(APIView):
    """Save the label of the caller's own assignment; saving again corrects it while the unit is open (one label),
    and is refused with 409 once the unit has settled."""

    @extend_schema(request=LabelInputSerializer, responses={200: LabelSerializer})
    def post(self, request, pk):
        assignment = access.assignment_for_annotator(request.user, pk)
        data = LabelInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            label = services.label_submit(
                assignment,
                data.validated_data["values"],
                note=data.validated_data["note"],
                link=data.validated_data["link"],
                correct=hasattr(assignment, "label"),
            )
        except services.AuditError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(LabelSerializer(label).data)


@blind_safe
class UnitView(APIView):
    """A unit with the labels the caller may see (see audits.access)."""

    @extend_schema(responses=UnitSerializer)
    def get(self, request, pk):
        unit = access.unit_for_user(request.user, pk)
        labels = selectors.labels_of_unit(unit)
        if not access.may_see_other_labels(request.user, unit):
            labels = [lab for lab in labels if lab.assignment.annotator_id == request.user.id]
        context = {
            "labels": labels,
            "identities": access.may_see_identities(request.user),
            "user_id": request.user.id,
            "state": access.unit_state_for(request.user, unit)[0],
        }
        body = UnitSerializer(unit, context=context).data
        body["stratum"] = access.stratum_for(request.user, unit)
        return Response(body)


class DisagreementListView(APIView):
    """Disputed units, lowest agreement first, with both labels (leads)."""

    @extend_schema(responses=UnitSerializer(many=True))
    def get(self, request, pk):
        access.require_lead(request.user)
        campaign = access.campaign_for_user(request.user, pk)
        out = [
            UnitSerializer(
                u, context={"labels": selectors.labels_of_unit(u), "identities": True, "user_id": request.user.id}
            ).data
            for u in selectors.adjudication_queue(campaign)
        ]
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
        except services.AuditInputError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except services.AuditError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        unit.refresh_from_db()
        context = {"labels": selectors.labels_of_unit(unit), "identities": True, "user_id": request.user.id}
        return Response(UnitSerializer(unit, context=context).data)


class AgreementView(APIView):
    """Per criterion, per campaign and per stratum: n, agreement, kappa, kappa_ci, alpha, alpha_ci, ac1; per stratum valid
    rates with Wilson intervals and the population estimate."""

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        description=(
            "{criteria: {<name>: {n, annotators, agreement, kappa, kappa_ci, alpha, alpha_ci, ac1, labels, confusion}}, "
            "valid: {...}, per_stratum: {<stratum>: {<name>: {...}}}, strata: [{stratum, population, sampled, decided, valid, "
            "rate, wilson}], population_estimate: {rate, interval, covered_share}}; fractions in [0, 1] (definitions: /help/metrics/#audits). "
            "kappa: first two labels of a unit; alpha (nominal, 95% bootstrap interval over units) and Gwet's AC1: every "
            "label. Leads and reviewers only."
        ),
    )
    def get(self, request, pk):
        campaign = access.campaign_for_user(request.user, pk)
        if not access.can_see_all(request.user):
            access.require_lead(request.user)
        return Response(agreement_body(campaign_agreement(campaign)))


def _interval(pair) -> list | None:
    return list(pair) if pair else None


def _criterion_body(c) -> dict:
    return {
        "n": c.n,
        "annotators": c.annotators,
        "agreement": c.agreement,
        "kappa": c.kappa,
        "kappa_ci": _interval(c.kappa_ci),
        "alpha": c.alpha,
        "alpha_ci": _interval(c.alpha_ci),
        "ac1": c.ac1,
        "labels": c.labels,
        "confusion": c.confusion,
    }


def agreement_body(figures) -> dict:
    """The agreement figures of a campaign as the API gives them."""
    return {
        "criteria": {c.criterion: _criterion_body(c) for c in figures.criteria},
        "valid": _criterion_body(figures.valid_agreement),
        "per_stratum": {
            s: {c.criterion: _criterion_body(c) for c in criteria} for s, criteria in figures.per_stratum.items()
        },
        "strata": [
            {
                "stratum": r.stratum,
                "population": r.population,
                "sampled": r.sampled,
                "decided": r.decided,
                "valid": r.valid,
                "rate": r.rate,
                "wilson": _interval(r.interval),
            }
            for r in figures.rates
        ],
        "population_estimate": {
            "rate": figures.estimate.rate,
            "interval": _interval(figures.estimate.interval),
            "covered_share": figures.estimate.covered_share,
        },
    }


CAMPAIGNS_PARAMETER = OpenApiParameter(
    "campaigns",
    str,
    description="Campaign ids the policy draws on, comma-separated or repeated (default: the "
    "benchmark's settled campaigns: started, not a pilot, every unit closed).",
)


def _policy_query(request, benchmark):
    """(policy, campaign ids or None, sources) from ?exclude= and ?campaigns=, or a 400 Response."""
    policy = request.query_params.get("exclude", "")
    if policy not in selectors.POLICIES:  # the effect page's words (audits.forms.EffectForm)
        return Response(
            {"exclude": [exclusion_policy_unknown(with_none=False, policies=selectors.POLICIES) % {"value": policy}]},
            status=status.HTTP_400_BAD_REQUEST,
        )
    raw = [p for v in request.query_params.getlist("campaigns") for p in v.split(",") if p.strip()]
    if not all(p.strip().isdigit() and len(p.strip()) < 10 for p in raw):
        return Response(
            {"campaigns": ["campaign ids: whole numbers, comma-separated"]}, status=status.HTTP_400_BAD_REQUEST
        )
    campaigns = [int(p) for p in raw] or None
    try:
        return policy, campaigns, selectors.policy_sources(benchmark, policy, campaigns)
    except ValueError as exc:
        return Response({"campaigns": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)


class ExcludedItemsView(APIView):
    """Item ids an exclusion policy leaves out of a benchmark's leaderboard, and the campaigns it drew on."""

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        parameters=[
            OpenApiParameter("exclude", str, enum=list(selectors.POLICIES), required=True),
            CAMPAIGNS_PARAMETER,
        ],
        description="{benchmark, exclude, campaigns: [ids drawn on], sources: words, items: [checklist item ids]}",
    )
    def get(self, request, slug):
        benchmark = get_object_or_404(Benchmark, slug=slug)
        query = _policy_query(request, benchmark)
        if isinstance(query, Response):
            return query
        policy, campaigns, sources = query
        return Response(
            {
                "benchmark": slug,
                "exclude": policy,
                "sources": sources,
                "campaigns": [c.pk for c in selectors.policy_campaigns(benchmark, campaigns)]
                if policy != "superseded"
                else [],
                "items": sorted(selectors.excluded_item_ids(benchmark, policy, campaigns)),
            }
        )


class EffectView(APIView):
    """A checklist leaderboard before and after an exclusion policy: scores, ranks, Kendall's tau, swaps and the
    excluded items behind each swap (what the effect page shows). Per-item pass rates: not for blind annotators."""

    permission_classes = [IsAuthenticated]  # blind annotators are refused by runs.access (not blind_safe)

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        parameters=[
            OpenApiParameter("exclude", str, enum=list(selectors.POLICIES), required=True),
            CAMPAIGNS_PARAMETER,
        ],
        description="{benchmark, exclude, sources, n_excluded, tau, rows: [{model, isr_before, isr_after, csr_before, "
        "csr_after, rank_before, rank_after, rank_change}], swaps: [{up, down, items: [{item_id, key, instance, "
        "description, pass_rate_up, pass_rate_down, difference}]}]}; ISR and CSR in percent, rank 1 = best (ties share "
        "the mean rank), tau is Kendall's tau-b between the rankings (METRICS.md sections 1 and 6).",
    )
    def get(self, request, slug):
        benchmark = get_object_or_404(Benchmark, slug=slug, kind=BenchmarkKind.CHECKLIST)
        query = _policy_query(request, benchmark)
        if isinstance(query, Response):
            return query
        policy, campaigns, sources = query
        result, items = selectors.policy_effect(benchmark, policy, Filters(), campaigns)

        def item(d):
            it = items.get(d["item_id"])
            return {
                **d,
                "key": it.key if it else None,
                "instance": it.instance.external_id if it else None,
                "description": it.description if it else None,
            }

        return Response(
            {
                "benchmark": slug,
                "exclude": policy,
                "sources": sources,
                "n_excluded": result.n_excluded,
                "tau": result.tau,
                "rows": [
                    {
                        "model": r.model,
                        "isr_before": r.isr_before,
                        "isr_after": r.isr_after,
                        "csr_before": r.csr_before,
                        "csr_after": r.csr_after,
                        "rank_before": r.rank_before,
                        "rank_after": r.rank_after,
                        "rank_change": r.rank_change,
                    }
                    for r in result.rows
                ],
                "swaps": [{"up": s.up, "down": s.down, "items": [item(d) for d in s.items]} for s in result.swaps],
            }
        )


@blind_safe  # an annotator reads their queue progress; the counts are for leads and reviewers (below)
class CampaignDetailView(APIView):
    """A campaign; for leads and reviewers also its unit counts, provenance totals and progress per annotator."""

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        description=(
            "CampaignSerializer fields; for whoever receives its units queue {done, total}; for leads and reviewers also counts {units, states, finals, labels_saved, "
            "labels_needed}, provenance {unanimous, adjudicated, unresolved, disputed, open} (units) and progress "
            "[{annotator, saved, reserved}]."
        ),
    )
    def get(self, request, pk):
        campaign = access.campaign_for_user(request.user, pk)
        body = dict(CampaignSerializer(campaign).data)
        if services.may_receive(campaign, request.user):
            body["queue"] = selectors.queue_progress(campaign, request.user)
        if access.can_see_all(request.user):
            body.update(
                counts=selectors.campaign_counts(campaign),
                provenance=selectors.provenance_totals(campaign),
                progress=selectors.annotator_progress(campaign),
            )
        return Response(body)


class SampleView(APIView):
    """A campaign's sample: strata (population, expected, sampled) and units with their items, a page at a time;
    a draft gives the sample its seed would draw now (units without ids). Leads and reviewers."""

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        parameters=[
            OpenApiParameter("offset", int),
            OpenApiParameter("limit", int, description="at most 500 (default 200)"),
        ],
        description="{campaign, state, allocation, size, seed, strata: [{stratum, population, expected, sampled}], "
        "count, offset, limit, units: [{id, position, key, stratum, state, final_status, final_source, instance, turn, "
        "items: [...]}]}",
    )
    def get(self, request, pk):
        access.require_overseer(request.user)
        campaign = access.campaign_for_user(request.user, pk)
        try:
            offset = max(0, int(request.query_params.get("offset", 0)))
            limit = min(500, max(1, int(request.query_params.get("limit", 200))))
        except ValueError:
            return Response({"detail": "offset and limit are whole numbers"}, status=status.HTTP_400_BAD_REQUEST)
        body = {
            "campaign": campaign.pk,
            "state": campaign.state,
            "allocation": campaign.allocation,
            "size": campaign.size,
            "seed": campaign.seed,
            "offset": offset,
            "limit": limit,
        }
        if campaign.state == "draft":
            draft = selectors.draft_allocation(campaign)
            drawn = services.campaign_sample(campaign)
            strata = [
                {
                    "stratum": r["stratum"],
                    "population": r["population"],
                    "expected": r["expected"],
                    "sampled": r["allocated"],
                }
                for r in draft["rows"]
            ]
            items = selectors.items_by_id({c.item_id for _, c in drawn[offset : offset + limit] if c.item_id})
            units = [
                {
                    "id": None,
                    "position": n,
                    "key": c.key,
                    "stratum": stratum,
                    "state": "",
                    "final_status": "",
                    "final_source": "",
                    "turn": c.turn,
                    "items": ItemSerializer([items[c.item_id]] if c.item_id in items else [], many=True).data,
                }
                for n, (stratum, c) in enumerate(drawn, start=1)
            ][offset : offset + limit]
            return Response({**body, "strata": strata, "count": len(drawn), "units": units})
        population = campaign.population or {}
        due = sampling.quotas(
            population,
            campaign.size,
            mode=campaign.allocation,
            minimum=campaign.minimum_per_stratum,
            sd=campaign.stratum_sd,
        )
        sampled = dict(campaign.units.values_list("stratum").annotate(n=Count("id")).order_by())
        strata = [
            {"stratum": s, "population": n, "expected": due.get(s), "sampled": sampled.get(s, 0)}
            for s, n in sorted(population.items())
        ]
        units = [
            {
                "id": u.pk,
                "position": u.position,
                "key": u.key,
                "stratum": u.stratum,
                "state": u.state,
                "final_status": u.final_status,
                "final_source": u.final_source,
                "instance": u.instance.external_id,
                "turn": u.turn,
                "items": ItemSerializer(items, many=True).data,
            }
            for u, items in selectors.sample_units(campaign, offset=offset, limit=limit)
        ]
        return Response({**body, "strata": strata, "count": sum(sampled.values()), "units": units})


class TableCSVRenderer(CSVRenderer):
    """text/csv of {"rows": [...]}: one column per key (nested answers as "values.<criterion>"), cells made
    spreadsheet-safe; anything else (an error) as the one-column table of runs' CSV renderer."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        rows = data.get("rows") if isinstance(data, dict) else None
        if rows is None:
            return super().render(data, accepted_media_type, renderer_context)
        out = io.StringIO()
        writer = csv.writer(out)
        flat = [_flatten(r) for r in rows]
        columns = list(dict.fromkeys(k for r in flat for k in r))
        writer.writerow(columns)
        for r in flat:
            writer.writerow(["" if r.get(c) is None else csv_safe(r.get(c)) for c in columns])
        return out.getvalue().encode("utf-8")


def _flatten(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update({f"{k}.{sub}": x for sub, x in v.items()})
        else:
            out[k] = v
    return out


class _ExportView(APIView):
    """JSON by default, CSV with ?format=csv or Accept: text/csv. Leads and reviewers."""

    renderer_classes = [renderers.JSONRenderer, TableCSVRenderer]
    name = ""

    def rows(self, campaign) -> list[dict]:
        raise NotImplementedError

    def get(self, request, pk):
        access.require_overseer(request.user)
        campaign = access.campaign_for_user(request.user, pk)
        response = Response({"campaign": campaign.pk, "rows": self.rows(campaign)})
        if request.accepted_renderer.format == "csv":
            response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-{self.name}.csv"'
        return response


def _export_schema(description: str):
    return extend_schema_view(
        get=extend_schema(
            responses=OpenApiTypes.OBJECT,
            parameters=[OpenApiParameter("format", str, enum=["json", "csv"])],
            description=description,
        )
    )


@_export_schema(
    "{campaign, rows: [{unit, position, key, stratum, slot, annotator, values: {criterion: answer}, valid, "
    "note, link, saved_at, updated_at, unit_state, final_status, final_source, overruled, upheld}]}; "
    "overruled: the label's valid / invalid lost to the final status (null while undecided or unresolved); "
    "upheld: an adjudication named this label's slot (null without one)."
)
class LabelExportView(_ExportView):
    """Every label of a campaign with its provenance: final status and source of its unit, overruled or upheld."""

    name = "labels"

    def rows(self, campaign):
        return selectors.campaign_labels(campaign)


@_export_schema(
    "{campaign, rows: [{unit, position, key, stratum, lead, final_status, reason, upheld_slot, shown_order, "
    "note, decided_at}]}"
)
class AdjudicationExportView(_ExportView):
    """Every adjudication of a campaign: unit, lead, final status, reason, upheld slot, shown order, note."""

    name = "adjudications"

    def rows(self, campaign):
        return selectors.campaign_adjudications(campaign)


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


class JudgeAccuracyView(APIView):
    """How often each judge is right against a verdict audit's closed units: accuracy, sensitivity, specificity and
    Cohen's kappa with 95% intervals, overall, per category and per model, and the units where they disagree with
    the judge's reasoning (leads and reviewers; what the judge accuracy page shows)."""

    permission_classes = [IsAuthenticated]  # blind annotators are refused by runs.access (not blind_safe)

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        description="{campaign, settled, units, closed, overall, category, model: [{judge, group, n, disagreements, "
        "accuracy, accuracy_low, accuracy_high, sensitivity..., specificity..., kappa...}], disagreements: [{unit, key, "
        "judge, model, category, item, attempt, human, verdict, reasoning}]}; rates in percent, kappa as is.",
    )
    def get(self, request, pk):
        access.require_overseer(request.user)
        campaign = access.campaign_for_user(request.user, pk)
        if campaign.subject != Subject.VERDICT:
            return Response(
                {
                    "detail": f"campaign {campaign.pk} audits {campaign.get_subject_display().lower()}: judge accuracy "
                    "needs a verdict audit"
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        page = calibration.judge_accuracy_page(campaign)
        return Response(
            {
                "campaign": campaign.pk,
                "settled": page.settled,
                "units": page.n_units,
                "closed": page.n_closed,
                **{k: [exports.accuracy_cells(r) for r in rows] for k, rows in page.rows.items()},
                "disagreements": page.disagreements,
            }
        )


class CalibratedView(APIView):
    """A checklist leaderboard calibrated by a settled verdict audit (prediction-powered ISR and CSR per model and
    judge, each judge's ranking beside the calibrated one); `campaign` names it, the newest settled one by default."""

    permission_classes = [IsAuthenticated]  # blind annotators are refused by runs.access (not blind_safe)

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        parameters=[OpenApiParameter("campaign", int, description="a settled verdict audit of the benchmark")],
        description="{benchmark, campaign (null without a settled verdict audit: nothing is calibrated), small_audit, "
        "rows: [{model, judge, raw_isr, isr, isr_low, isr_high, raw_csr, csr, csr_low, csr_high, rectifier, rank_judge, "
        "rank_calibrated, n_pairs, n_audited}], rankings: [{judge, tau, swaps}]}; ISR and CSR in percent.",
    )
    def get(self, request, slug):
        benchmark = get_object_or_404(Benchmark, slug=slug, kind__in=selectors.SUBJECT_KINDS[Subject.VERDICT])
        asked = request.query_params.get("campaign", "")
        chosen = calibration.settled_verdict_campaign(benchmark, asked)
        if asked and chosen is None:
            return Response(
                {"detail": f"campaign {asked} is not a settled verdict audit of {slug}"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        page = calibration.calibrated_page(benchmark, chosen)
        return Response(
            {
                "benchmark": slug,
                "campaign": chosen.pk if chosen else None,
                "small_audit": page.small,
                "rows": exports.calibrated_rows(page),
                "rankings": [
                    {**r, "swaps": [list(s) for s in c.swaps]}
                    for r, c in zip(exports.ranking_rows(page), page.rankings, strict=True)
                ],
            }
        )
