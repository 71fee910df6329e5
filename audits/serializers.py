"""API shapes of audits. Output serializers are blind by construction: an assignment shows the
unit and its items, never another label, another annotator or a verdict."""

from django.contrib.auth import get_user_model
from rest_framework import serializers

from audits.access import UNSETTLED
from audits.models import Allocation, Campaign, FinalStatus, Subject
from audits.sampling import STRATA
from audits.services import REWRITE_MAX_TEXT
from runs.models import Benchmark


class BenchmarkSlugField(serializers.SlugRelatedField):
    """A benchmark by slug; a NUL character is refused before the lookup (PostgreSQL cannot even compare it)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and "\x00" in data:
            raise serializers.ValidationError("Null characters are not allowed.")
        return super().to_internal_value(data)


class CampaignInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    subject = serializers.ChoiceField(choices=Subject.choices)
    benchmarks = BenchmarkSlugField(slug_field="slug", queryset=Benchmark.objects.all(), many=True)
    strata = serializers.ListField(child=serializers.ChoiceField(choices=list(STRATA)), required=False, default=list)
    allocation = serializers.ChoiceField(choices=Allocation.choices, default=Allocation.PROPORTIONAL)
    minimum_per_stratum = serializers.IntegerField(min_value=0, max_value=100_000, default=0)
    size = serializers.IntegerField(min_value=1, max_value=100_000)
    seed = serializers.IntegerField(default=1, min_value=-(2**63), max_value=2**63 - 1)  # a BigIntegerField
    annotators_per_unit = serializers.IntegerField(min_value=2, max_value=10, default=2)
    reservation_minutes = serializers.IntegerField(min_value=1, max_value=24 * 60, default=30)
    stratum_sd = serializers.DictField(
        child=serializers.FloatField(min_value=0),
        required=False,
        default=dict,
        help_text="Neyman allocation: {stratum: standard deviation}; wins over sd_from.",
    )
    sd_from = serializers.PrimaryKeyRelatedField(
        queryset=Campaign.objects.all(),
        required=False,
        allow_null=True,
        default=None,
        help_text="Neyman allocation: read the standard "
        "deviations from this (pilot) campaign's per-stratum valid rates.",
    )
    annotators = serializers.SlugRelatedField(
        slug_field="username",
        queryset=get_user_model().objects.all(),
        many=True,
        required=False,
        default=list,
        help_text="Usernames that receive the units; empty = every annotator.",
    )
    pilot = serializers.BooleanField(default=False, help_text="Exclusion policies leave a pilot out unless chosen.")
    start = serializers.BooleanField(default=True, help_text="Freeze the sample at once.")


class AnnotatorsInputSerializer(serializers.Serializer):
    annotators = serializers.SlugRelatedField(
        slug_field="username",
        queryset=get_user_model().objects.all(),
        many=True,
        help_text="Usernames that receive the units; [] = every annotator.",
    )


class CampaignSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    subject = serializers.CharField()
    state = serializers.CharField()
    strata = serializers.ListField(child=serializers.CharField())
    allocation = serializers.CharField()
    size = serializers.IntegerField()
    seed = serializers.IntegerField()
    annotators_per_unit = serializers.IntegerField()
    population = serializers.DictField(child=serializers.IntegerField())
    stratum_sd = serializers.DictField(child=serializers.FloatField())
    pilot = serializers.BooleanField()
    annotators = serializers.SerializerMethodField()
    units = serializers.IntegerField(source="units.count")

    def get_annotators(self, obj) -> list[str]:
        """Usernames assigned to the campaign ([] = open to every annotator)."""
        return sorted(obj.annotators.values_list("username", flat=True))


class ItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    key = serializers.CharField()
    description = serializers.CharField()
    category = serializers.CharField()
    check_type = serializers.CharField()
    conditional = serializers.BooleanField()
    turn = serializers.IntegerField(allow_null=True)
    version = serializers.IntegerField()


class AssignmentSerializer(serializers.Serializer):
    """The annotator's own reservation: the unit and its items, nothing about the other annotators or judges."""

    id = serializers.IntegerField()
    unit = serializers.IntegerField(source="unit_id")
    key = serializers.CharField(source="unit.key")
    stratum = serializers.CharField(source="unit.stratum")
    instance = serializers.CharField(source="unit.instance.external_id")
    turn = serializers.IntegerField(source="unit.turn", allow_null=True)
    attempt = serializers.IntegerField(
        source="unit.attempt_id", allow_null=True, help_text="the attempt a verdict unit audits, else null"
    )
    items = ItemSerializer(many=True)
    expires_at = serializers.DateTimeField()
    submitted = serializers.SerializerMethodField()

    def get_submitted(self, obj) -> bool:
        return obj.submitted_at is not None


class LabelInputSerializer(serializers.Serializer):
    values = serializers.DictField(child=serializers.CharField())
    note = serializers.CharField(required=False, allow_blank=True, default="")
    link = serializers.CharField(required=False, allow_blank=True, default="", max_length=300)


class LabelSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    assignment = serializers.IntegerField(source="assignment_id")
    values = serializers.DictField()
    valid = serializers.BooleanField()
    note = serializers.CharField()
    link = serializers.CharField()


class UnitSerializer(serializers.Serializer):
    """A unit for a lead (labels by slot, annotators named) or an annotator (own label; others anonymous once closed)."""

    id = serializers.IntegerField()
    key = serializers.CharField()
    stratum = serializers.CharField(help_text='"" for an annotator of a verdict unit until it closes')
    attempt = serializers.IntegerField(source="attempt_id", allow_null=True)
    state = serializers.SerializerMethodField(
        help_text='open, disputed, closed; "unsettled" for an annotator until '
        "the unit closes (audits.access.unit_state_for)"
    )
    agreement = serializers.SerializerMethodField(help_text="null for an annotator until the unit closes")
    final_status = serializers.CharField()
    final_source = serializers.CharField()
    labels = serializers.SerializerMethodField()

    def get_state(self, obj) -> str:
        return self.context.get("state", obj.state)

    def get_agreement(self, obj) -> float | None:
        return None if self.context.get("state") == UNSETTLED else obj.agreement

    def get_labels(self, obj) -> list[dict]:
        out = []
        for _n, label in enumerate(self.context["labels"], start=1):
            row = {"values": label.values, "valid": label.valid, "note": label.note, "link": label.link}
            if self.context["identities"]:
                row.update(slot=label.assignment.slot, annotator=label.assignment.annotator.get_username())
            else:
                row["mine"] = label.assignment.annotator_id == self.context["user_id"]
            out.append(row)
        return out


class AdjudicationInputSerializer(serializers.Serializer):
    final_status = serializers.ChoiceField(choices=FinalStatus.choices)
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    upheld_slot = serializers.IntegerField(required=False, allow_null=True, default=None)
    note = serializers.CharField(required=False, allow_blank=True, default="")


class ItemRewriteInputSerializer(serializers.Serializer):
    """A rewrite: the new text, optionally a new check type or category (default: the old item's), why, and the unit it came from."""

    description = serializers.CharField(max_length=REWRITE_MAX_TEXT)
    check_type = serializers.CharField(max_length=100, required=False, allow_blank=True, allow_null=True, default=None)
    category = serializers.CharField(max_length=200, required=False, allow_blank=True, allow_null=True, default=None)
    reason = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    unit = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        max_value=2**31 - 1,
        help_text="The audit unit the rewrite comes from (it must be about this item).",
    )


class ItemVersionSerializer(serializers.Serializer):
    """A version of an item: `supersedes` is the id of the item it rewrites (null for a first version)."""

    id = serializers.IntegerField()
    key = serializers.CharField()
    version = serializers.IntegerField()
    supersedes = serializers.IntegerField(source="supersedes_id", allow_null=True)
    supersedes_key = serializers.SerializerMethodField()
    instance = serializers.CharField(source="instance.external_id")
    description = serializers.CharField()
    category = serializers.CharField()
    check_type = serializers.CharField()

    def get_supersedes_key(self, obj) -> str | None:
        return obj.supersedes.key if obj.supersedes_id else None
