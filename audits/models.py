"""Audit campaigns of checklist items and generated constraints.

A campaign samples audit units (a checklist item, a generated hierarchy constraint, or
one dialogue turn's user query) from one or more benchmarks, stratified and seeded, and
freezes the sample when it starts. Each unit gets `annotators_per_unit` assignments to
distinct annotators; an assignment is a reservation until its label is saved. Units
whose labels differ go to a lead for adjudication; the unit's final status and where it
came from (unanimous, adjudicated, unresolved) is what exclusion policies read.
"""

from django.conf import settings
from django.db import models

from runs.models import Attempt, Benchmark, ChecklistItem, Instance


class Subject(models.TextChoices):
    CHECKLIST = "checklist_items", "Checklist items of a benchmark"
    HIERARCHY = "hierarchy_constraints", "Generated hierarchy constraints"
    DIALOGUE = "dialogue_queries", "Synthesized dialogue queries (one unit per turn)"
    VERDICT = "verdicts", "Judge verdicts (one unit per attempt and checklist item)"


class Allocation(models.TextChoices):
    PROPORTIONAL = "proportional", "Proportional to stratum size"
    EQUAL = "equal", "Equal per stratum"
    MINIMUM = "minimum", "Minimum per stratum, rest proportional"
    NEYMAN = "neyman", "Neyman: proportional to stratum size x standard deviation (from a pilot)"


class CampaignState(models.TextChoices):
    DRAFT = "draft", "draft"
    STARTED = "started", "started"
    CLOSED = "closed", "closed"


class Campaign(models.Model):
    """A stratified, seeded sample of audit units and how it is labelled.

    `strata` lists the stratum dimensions (see audits.sampling.STRATA); `population`
    is frozen at start: {stratum: number of candidate units}, so re-weighting uses the
    population the sample was drawn from. `stratum_sd` ({stratum: standard deviation of the
    valid rate}, from a pilot) drives the Neyman allocation. A `pilot` campaign never feeds an
    exclusion policy unless chosen by name. When `annotators` is not empty only they receive units.
    """

    name = models.CharField(max_length=200)
    subject = models.CharField(max_length=30, choices=Subject.choices)
    benchmarks = models.ManyToManyField(Benchmark, related_name="audit_campaigns")
    strata = models.JSONField(default=list, blank=True)
    allocation = models.CharField(max_length=20, choices=Allocation.choices, default=Allocation.PROPORTIONAL)
    minimum_per_stratum = models.PositiveIntegerField(default=0)
    size = models.PositiveIntegerField()
    seed = models.BigIntegerField(default=1)
    annotators_per_unit = models.PositiveSmallIntegerField(default=2)
    reservation_minutes = models.PositiveIntegerField(default=30)
    state = models.CharField(max_length=10, choices=CampaignState.choices, default=CampaignState.DRAFT)
    population = models.JSONField(default=dict, blank=True)
    stratum_sd = models.JSONField(default=dict, blank=True)
    pilot = models.BooleanField(default=False, help_text="A trial run: exclusion policies leave it out unless chosen.")
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="audit_campaigns")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(annotators_per_unit__gte=2), name="campaign_two_annotators_or_more"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class UnitState(models.TextChoices):
    OPEN = "open", "being labelled"
    DISPUTED = "disputed", "awaiting adjudication"
    CLOSED = "closed", "closed"


class FinalStatus(models.TextChoices):
    VALID = "valid", "valid"
    INVALID = "invalid", "invalid"
    UNRESOLVED = "unresolved", "unresolved"


class FinalSource(models.TextChoices):
    UNANIMOUS = "unanimous", "unanimous"
    ADJUDICATED = "adjudicated", "adjudicated"
    UNRESOLVED = "unresolved", "unresolved"


class AuditUnit(models.Model):
    """One sampled thing to label: an item (checklist, hierarchy), an instance's dialogue turn, or (verdict
    campaigns) one attempt's trajectory against one checklist item (`attempt` set, `item` the item).

    `key` is the stable natural key the sample was drawn by (benchmark/instance/item key
    or turn), so a re-drawn sample can be compared with the frozen one across databases.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="units")
    key = models.CharField(max_length=700)
    position = models.PositiveIntegerField()
    stratum = models.CharField(max_length=400)
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(ChecklistItem, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_units")
    turn = models.PositiveIntegerField(null=True, blank=True)
    attempt = models.ForeignKey(Attempt, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_units")
    state = models.CharField(max_length=10, choices=UnitState.choices, default=UnitState.OPEN)
    agreement = models.FloatField(null=True, blank=True)
    final_status = models.CharField(max_length=12, choices=FinalStatus.choices, blank=True)
    final_source = models.CharField(max_length=12, choices=FinalSource.choices, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "key"], name="audit_unit_unique_key"),
            models.UniqueConstraint(fields=["campaign", "position"], name="audit_unit_unique_position"),
        ]
        indexes = [
            models.Index(fields=["campaign", "state", "agreement"], name="audit_unit_queue"),
            models.Index(fields=["item", "final_status"], name="audit_unit_by_item_status"),
        ]

    def __str__(self) -> str:
        return self.key


class Assignment(models.Model):
    """One annotator's slot on a unit: a reservation until `submitted_at`; never two slots for one person."""

    unit = models.ForeignKey(AuditUnit, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="audit_assignments")
    slot = models.PositiveSmallIntegerField()
    reserved_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["unit", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "annotator"], name="assignment_one_per_annotator"),
            models.UniqueConstraint(fields=["unit", "slot"], name="assignment_unique_slot"),
        ]
        indexes = [models.Index(fields=["annotator", "submitted_at"], name="assignment_by_annotator")]


class Skip(models.Model):
    """An annotator put a unit back (skipped or released it): it goes to the end of their queue, free for others."""

    unit = models.ForeignKey(AuditUnit, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["unit", "annotator"], name="skip_one_per_annotator")]


class Label(models.Model):
    """An annotator's answers on a unit: {criterion: value}, whether they make it valid, and a note."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="label")
    values = models.JSONField()
    valid = models.BooleanField()
    link = models.CharField(max_length=300, blank=True)  # key of the duplicated / conflicting item
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)


class Adjudication(models.Model):
    """A lead's decision on a disputed unit: final status, reason from the rubric's issues, which label it upheld.

    `shown_order` records the random order the two labels were shown in (slots), so the
    "Annotator 1/2" the lead saw can be traced back.
    """

    unit = models.OneToOneField(AuditUnit, on_delete=models.CASCADE, related_name="adjudication")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    final_status = models.CharField(max_length=12, choices=FinalStatus.choices)
    reason = models.CharField(max_length=50, blank=True)
    upheld_slot = models.PositiveSmallIntegerField(null=True, blank=True)
    shown_order = models.JSONField(default=list, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)


class ItemRevision(models.Model):
    """A lead's rewrite of a checklist item: the old version, the new one, who, why, and from which unit.

    The link itself lives on the items (`ChecklistItem.supersedes`); this row is the audit
    trail: it can be listed per lead, unit or campaign, and it keeps both texts as the lead
    saw them, since a corrected import may later update the old item's text in place.
    """

    old_item = models.OneToOneField(ChecklistItem, on_delete=models.CASCADE, related_name="rewrite")
    new_item = models.OneToOneField(ChecklistItem, on_delete=models.CASCADE, related_name="created_by_rewrite")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField(blank=True)
    unit = models.ForeignKey(AuditUnit, null=True, blank=True, on_delete=models.SET_NULL, related_name="item_revisions")
    old_description = models.TextField(blank=True)
    new_description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~models.Q(old_item=models.F("new_item")), name="item_revision_two_items"),
        ]

    def __str__(self) -> str:
        return f"{self.old_item_id} -> {self.new_item_id}"
