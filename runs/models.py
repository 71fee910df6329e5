"""The stored shape of evaluation results.

Benchmarks hold instances; instances hold checklist items; runs (one model, one
repetition, one setting) hold attempts on instances; judges give verdicts on
(attempt, item). Rollups are derived from verdicts by `runs.services.rollups_rebuild_for_attempts`
so that no page aggregates the verdict table on request.
"""

import uuid

from django.conf import settings
from django.db import models


class BenchmarkKind(models.TextChoices):
    CHECKLIST = "checklist", "Checklist (OctoBench-style)"
    DIALOGUE = "dialogue", "Multi-turn dialogue (EvolIF-style)"
    HIERARCHY = "hierarchy", "Privilege hierarchy (ManyIH-style)"
    CHOICE = "choice", "Answer match (GuideBench-style)"
    CONFLICT = "conflict", "Instruction conflict (OctoBench-Conflict)"


class Benchmark(models.Model):
    """A benchmark (or one version of it): the namespace of its instances."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=BenchmarkKind.choices)
    version = models.CharField(max_length=50, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    #: bumped in the transaction that changes what its leaderboards show (rollups rebuilt, audit
    #: statuses changed), so computed rows can be cached under (benchmark, data_generation)
    data_generation = models.BigIntegerField(default=0)
    #: whether it has text the search page finds (a trajectory message, a response, a judge's reasoning): set by
    #: the writers of that text (`runs.search.benchmarks_mark_searchable`), so its Search tab costs no query
    searchable = models.BooleanField(default=False)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class Instance(models.Model):
    """One task of a benchmark: a repo task, a dialogue script, a hierarchy sample or a choice task.

    `spec` keeps the source record as the agent saw it (system prompt, user queries,
    guidelines, options, ground truth, privilege-tagged instructions, dialogue script).
    """

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="instances")
    external_id = models.CharField(max_length=300)
    primary_category = models.CharField(max_length=200, blank=True)
    scaffold = models.CharField(max_length=100, blank=True)
    scaffold_version = models.CharField(max_length=50, blank=True)
    spec = models.JSONField(default=dict)
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["benchmark", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "external_id"], name="instance_unique_external_id"),
        ]
        indexes = [
            models.Index(fields=["benchmark", "primary_category"], name="instance_by_primary_category"),
            models.Index(fields=["benchmark", "scaffold"], name="instance_by_scaffold"),
        ]

    def __str__(self) -> str:
        return self.external_id


class ChecklistItem(models.Model):
    """One binary check on an instance.

    `category` is the normalised source category (METRICS.md section 1) and
    `category_original` the spelling the file used. Dialogue constraints carry the
    `turn` they are active at; hierarchy instructions carry `privilege` and, in
    `details`, their conflicts and whether the resolution engine made them active.
    `group` is the constraint family (EvolIF id, ManyIH style group, guideline rule type).
    """

    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=300)
    position = models.PositiveIntegerField(default=0)
    category = models.CharField(max_length=200, blank=True)
    category_original = models.CharField(max_length=200, blank=True)
    check_type = models.CharField(max_length=100, blank=True)
    group = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    conditional = models.BooleanField(default=False)
    turn = models.PositiveIntegerField(null=True, blank=True)
    privilege = models.IntegerField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64)
    #: an audit may rewrite an item: the rewrite is a new item (version + 1) that `supersedes`
    #: the old one; the old item and its verdicts stay as they were
    version = models.PositiveIntegerField(default=1)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.RESTRICT, related_name="superseded_by"
    )

    class Meta:
        ordering = ["instance", "position"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "key"], name="item_unique_key"),
        ]
        indexes = [
            models.Index(fields=["instance", "category"], name="item_by_category"),
            models.Index(fields=["instance", "turn"], name="item_by_turn"),
        ]

    def __str__(self) -> str:
        return self.key


class AgentModel(models.Model):
    """The model under evaluation (as named by the harness)."""

    name = models.CharField(max_length=200, unique=True)
    display_name = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.display_name or self.name


class JudgeKind(models.TextChoices):
    LLM = "llm", "LLM judge"
    CHECKER = "checker", "Deterministic checker"
    HUMAN = "human", "Person"
    LOGGED = "logged", "Verdicts logged by the harness"


class Judge(models.Model):
    """Who gave a verdict: an LLM judge, one of the portal's checkers, a person, or the harness log."""

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=20, choices=JudgeKind.choices, default=JudgeKind.LLM)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    """One model's pass over (part of) a benchmark: one repetition under one setting.

    Several runs of the same model with the same settings are repetitions. `settings`
    holds harness parameters (patience, privilege interface, feedback); `sources` the
    files it was ingested from with their SHA-256.
    """

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="runs")
    model = models.ForeignKey(AgentModel, on_delete=models.PROTECT, related_name="runs")
    label = models.CharField(max_length=200)
    repetition = models.PositiveIntegerField(default=1)
    scaffold = models.CharField(max_length=100, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    sources = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["benchmark", "label"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "label"], name="run_unique_label"),
        ]
        indexes = [models.Index(fields=["benchmark", "model"], name="run_by_model")]

    def __str__(self) -> str:
        return self.label


class FigureDirection(models.TextChoices):
    HIGHER = "higher", "higher is better"
    LOWER = "lower", "lower is better"
    UNKNOWN = "", "direction not stated"


class ReportedFigure(models.Model):
    """A figure a harness reports for a whole run (lm-eval's results file: F1, BLEU, MAE, accuracy...), kept as
    the harness wrote it: `value` is null for NaN, an infinity or "N/A" and `value_text` then holds that word.
    `per_sample` says what the portal has of it per sample: "verdicts" (items scored per sample), "values"
    (per-sample numbers; `sample_mean` over `samples` finite ones, `left_out` non-finite) or "" (none: a
    corpus-level metric such as F1 or BLEU, computed over the whole task)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="reported_figures")
    #: the metric as the harness names it, with its filter ("f1,none", "exact_match,strict-match")
    name = models.CharField(max_length=200)
    value = models.FloatField(null=True, blank=True)
    value_text = models.CharField(max_length=40, blank=True)
    stderr = models.FloatField(null=True, blank=True)
    stderr_text = models.CharField(max_length=40, blank=True)
    direction = models.CharField(max_length=10, choices=FigureDirection.choices, blank=True)
    #: how the harness aggregates it over samples ("mean", "f1", "bleu", "perplexity"...), when it says
    aggregation = models.CharField(max_length=100, blank=True)
    per_sample = models.CharField(max_length=10, blank=True)
    sample_mean = models.FloatField(null=True, blank=True)
    samples = models.PositiveIntegerField(default=0)
    left_out = models.PositiveIntegerField(default=0)
    #: who computed it ("lm-evaluation-harness")
    source = models.CharField(max_length=100)

    class Meta:
        ordering = ["run", "name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="reported_figure_unique_name")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.name}"


class Attempt(models.Model):
    """One model's attempt at one instance within a run.

    `response` is the final answer (a choice letter, code, the last message); `outcome`
    holds structured results that are not item verdicts (unit tests, per-turn patience,
    parsed answers). The trajectory itself lives in `Trajectory` so listing attempts
    never loads megabytes of messages.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="attempts")
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="attempts")
    response = models.TextField(blank=True)
    outcome = models.JSONField(default=dict, blank=True)
    assistant_turns = models.PositiveIntegerField(null=True, blank=True)
    # where the tokens and the time went, as the harness logged them (docs/metrics.md, "Tokens, time and tool
    # calls"); null = the source did not log it, never 0. Filled at import while the file streams.
    input_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    output_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    total_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    #: seconds the model spent answering (the sum over its calls, as the source times them)
    model_seconds = models.FloatField(null=True, blank=True)
    #: seconds from start to end of the attempt, as the source defines it
    wall_seconds = models.FloatField(null=True, blank=True)
    model_calls = models.PositiveIntegerField(null=True, blank=True)
    tool_calls = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "instance"]
        constraints = [
            models.UniqueConstraint(fields=["run", "instance"], name="attempt_unique_run_instance"),
        ]
        indexes = [models.Index(fields=["instance", "run"], name="attempt_by_instance")]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.instance_id}"


class Trajectory(models.Model):
    """An attempt's trajectory: the heading of each thread, main agent first; the messages are
    `TrajectoryMessage` rows (`runs.trajectory_store`), so a page reads one window of a thread.

    `threads` is [{"meta", "tools", "message_count", "unit_count"}]. The whole document, with each
    thread's "messages" ({"role", "content", "reasoning"?, "tool_calls"?: [{"id", "name",
    "arguments"}], "tool_call_id"?, "tool_name"?}, tool results next to their call), is
    `runs.trajectory_view.stored_threads`; `content_hash` and `size_bytes` are of that document.
    """

    attempt = models.OneToOneField(Attempt, on_delete=models.CASCADE, related_name="trajectory")
    threads = models.JSONField(default=list)
    message_count = models.PositiveIntegerField(default=0)
    size_bytes = models.PositiveBigIntegerField(default=0)
    content_hash = models.CharField(max_length=64)


class TrajectoryMessage(models.Model):
    """One message of one thread of an attempt's trajectory, where a page reads a window of them.

    `unit` numbers the thread's display units (a message, with the tool results it called folded
    under it: a folded result carries its call's unit), `turn` the assistant turns, as the attempt
    page shows them. `content` and `reasoning` hold those keys when they are text (NULL otherwise);
    `rest` every other key of the message, as imported.
    """

    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="+", db_index=False)
    thread = models.PositiveIntegerField()
    index = models.PositiveIntegerField()
    unit = models.PositiveIntegerField()
    turn = models.PositiveIntegerField(null=True, blank=True)
    role = models.TextField()
    content = models.TextField(null=True, blank=True)
    reasoning = models.TextField(null=True, blank=True)
    rest = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["attempt", "thread", "index"], name="trajectory_message_unique")]
        # a window of display units; a jump finds a message's unit through the unique index
        indexes = [models.Index(fields=["attempt", "thread", "unit"], name="trajectory_message_by_unit")]


class VerdictResult(models.TextChoices):
    PASS = "pass", "pass"
    FAIL = "fail", "fail"
    NOT_APPLICABLE = "na", "not applicable"


class Verdict(models.Model):
    """One judge's verdict on one checklist item of one attempt."""

    # no single-column indexes on attempt and item: each leads a composite index below, and every
    # index is one more write per verdict stored
    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="verdicts", db_index=False)
    item = models.ForeignKey(ChecklistItem, on_delete=models.CASCADE, related_name="verdicts", db_index=False)
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="verdicts")
    result = models.CharField(max_length=4, choices=VerdictResult.choices)
    reasoning = models.TextField(blank=True)
    score = models.FloatField(null=True, blank=True)
    evidence = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["attempt", "item", "judge"], name="verdict_unique"),
        ]
        indexes = [
            models.Index(fields=["attempt", "judge"], name="verdict_by_attempt_judge"),
            models.Index(fields=["item", "judge"], name="verdict_by_item_judge"),
        ]


class ReportStatus(models.TextChoices):
    """What a judge's result record for one attempt was (OctoBench: one entry of evaluate.py's `results`)."""

    SCORED = "scored", "scored"
    REPLY_NOT_JSON = "not_json", "the judge's reply was not JSON"
    REPLY_ERROR = "error", "the judge's reply was read as an error"
    NO_CHECKS = "no_checks", "the judge's reply had no checks"
    FAILED = "failed", "the judge API call failed"


class JudgeReport(models.Model):
    """What one judge's scores file said about one attempt as a whole, besides its verdicts.

    OctoBench (mini-vela evaluate.py) writes one result per instance: its reward and
    binary_reward, and for an instance it could not score (the judge's reply was not JSON,
    the API call failed) the error and the judge's raw reply instead of checks. An unscored
    attempt counts, as evaluate.py counts it (reward 0), as `n_applicable_extra` failed
    checks (every check of its checklist, at least one). `unrecognised` maps a check id to
    the result string evaluate.py does not recognise (only "success" passes; that verdict is
    stored as a fail); `extra_checks` are checks the judge gave that the checklist does not
    have (an unknown, missing or repeated check id), counted as evaluate.py counts them.
    """

    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="judge_reports", db_index=False)
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=20, choices=ReportStatus.choices, default=ReportStatus.SCORED)
    error = models.TextField(blank=True)
    raw_reply = models.TextField(blank=True)
    reward = models.FloatField(null=True, blank=True)
    binary_reward = models.IntegerField(null=True, blank=True)
    unrecognised = models.JSONField(default=dict, blank=True)
    extra_checks = models.JSONField(default=list, blank=True)
    n_applicable_extra = models.PositiveIntegerField(default=0)
    n_passed_extra = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["attempt", "judge"], name="judge_report_unique"),
        ]

    @property
    def unscored(self) -> bool:
        return self.status != ReportStatus.SCORED


class AttemptRollup(models.Model):
    """Per attempt and judge: how many items were applicable and passed (METRICS.md section 1).

    Denormalises run, model, benchmark and instance facets so leaderboards filter and
    group without joining the verdict table. Every column but the counts is a copy: the attempt
    and judge of the verdicts (or judge report) counted, the facets of their attempt (the rebuild
    selects them through the verdicts and reports, whose keys the database checks, in the same
    transaction; that check also locks the attempt against deletion until the commit). So the
    database checks none of these keys again: a constraint on each copy is one more lookup per row
    at every commit for nothing (the attempt's alone, on the three rollup tables, cost 2.8 s of a
    1M-verdict import's commit; docs/performance.md, "Ingest"). Deleting an attempt, judge, benchmark,
    run, model or instance still deletes its rollups: Django cascades. Single-column indexes that lead
    a composite one are left out for the same reason.
    """

    attempt = models.ForeignKey(
        Attempt, on_delete=models.CASCADE, related_name="rollups", db_constraint=False, db_index=False
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    benchmark = models.ForeignKey(
        Benchmark, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    model = models.ForeignKey(AgentModel, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    n_items = models.PositiveIntegerField()
    n_applicable = models.PositiveIntegerField()
    n_passed = models.PositiveIntegerField()
    #: the judge's report status when it could not score the attempt (counted as failed checks), else ""
    unscored = models.CharField(max_length=20, blank=True, default="")
    #: verdicts whose result string the benchmark's reference scorer does not recognise (counted as it counts them)
    n_unrecognised = models.PositiveIntegerField(default=0)
    #: the items whose verdict passed, and failed, as comma-separated ids in no order: what a paired
    #: comparison's flipped items are read from (runs.selectors.checklist.compare_sides), not the verdicts
    passed_items = models.TextField(blank=True, default="")
    failed_items = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["attempt", "judge"], name="attempt_rollup_unique"),
        ]
        indexes = [models.Index(fields=["benchmark", "judge", "model"], name="attempt_rollup_leaderboard")]

    @property
    def all_passed(self) -> bool:
        return self.n_applicable > 0 and self.n_passed == self.n_applicable


class GroupRollup(models.Model):
    """Per attempt, judge and facet value (category, check type, constraint group, turn).

    `dimension` is one of "category", "check_type", "group", "turn". Attempt, judge, benchmark and
    model are copies, without constraints of their own (see AttemptRollup).
    """

    # judge and model lead no index of their own: pages find these rows through the leaderboard
    # index, rebuilds through the unique one; only deleting a judge or a model scans (rare, admin)
    attempt = models.ForeignKey(
        Attempt, on_delete=models.CASCADE, related_name="group_rollups", db_constraint=False, db_index=False
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False)
    benchmark = models.ForeignKey(
        Benchmark, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    model = models.ForeignKey(
        AgentModel, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    dimension = models.CharField(max_length=20)
    value = models.CharField(max_length=200)
    n_applicable = models.PositiveIntegerField()
    n_passed = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["attempt", "judge", "dimension", "value"], name="group_rollup_unique"),
        ]
        indexes = [
            models.Index(fields=["benchmark", "dimension", "judge", "model"], name="group_rollup_leaderboard"),
        ]


class JudgeDisagreement(models.Model):
    """An attempt's checklist item its judges split on: at least one judge passed it and another failed it.

    Kept by the rollup rebuild from all the attempt's verdicts (whichever judges it rebuilds), so the
    judge sensitivity page counts splits per item from these rows (a third of the pairs at 10M
    verdicts) instead of grouping the verdict table. `passed_by` and `failed_by` hold the ids of the
    judges that passed and failed the item, as the keys of a JSON object (`{"3": 1}`; their sizes are
    the pass and fail counts), so a judge filter keeps the pairs split among its judges; a pair absent
    here splits under no choice of judges. The attempt and item are its verdicts', benchmark, run, model
    and instance copies of the attempt's, all without constraints (see AttemptRollup).
    """

    attempt = models.ForeignKey(
        Attempt, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    item = models.ForeignKey(
        ChecklistItem, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    benchmark = models.ForeignKey(
        Benchmark, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False)
    model = models.ForeignKey(
        AgentModel, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    instance = models.ForeignKey(
        Instance, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    passed_by = models.JSONField()
    failed_by = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["attempt", "item"], name="judge_disagreement_unique"),
        ]
        indexes = [models.Index(fields=["benchmark", "item"], name="judge_disagreement_by_item")]


class JobState(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"


class Job(models.Model):
    """A background job (ingest, rollup rebuild, re-check) and what it reported."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=50)
    params = models.JSONField(default=dict)
    files = models.JSONField(default=list)
    state = models.CharField(max_length=20, choices=JobState.choices, default=JobState.QUEUED)
    progress_done = models.PositiveBigIntegerField(default=0)
    progress_total = models.PositiveBigIntegerField(default=0)
    message = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    error_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts_made = models.PositiveIntegerField(default=0)
    #: whether running a failed job again may end otherwise: not when its own files were refused (a retry
    #: reads the same files), but when it met the database or the server, or waits for another import's data
    retry_may_fix = models.BooleanField(default=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state", "created_at"], name="job_by_state")]

    @property
    def finished(self) -> bool:
        return self.state in (JobState.SUCCEEDED, JobState.FAILED)

    @property
    def percent(self) -> int:
        if self.state == JobState.SUCCEEDED:
            return 100
        if not self.progress_total:
            return 0
        return min(100, int(100 * self.progress_done / self.progress_total))


class ShareScope(models.TextChoices):
    # the stored values predate pages other than the leaderboard: "leaderboard" means the frozen page alone
    LEADERBOARD = "leaderboard", "The page only"
    ATTEMPTS = "attempts", "The page and the attempts it links to"


class ShareLink(models.Model):
    """A read-only public link to a frozen page snapshot, of any kind's page (`runs.pages`, `runs.sharing`).

    Only the SHA-256 of the token is stored, so a database leak does not leak live
    links. `state` is the leaderboard's filter state, `snapshot` its computed rows and
    chart at `created_at`; with scope "attempts" the link may also open the attempts
    listed in `attempt_ids`. `data_version` says which verdicts the snapshot saw.
    """

    token_hash = models.CharField(max_length=64, unique=True)
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="share_links")
    state = models.JSONField(default=dict)
    snapshot = models.JSONField(default=dict)
    scope = models.CharField(max_length=20, choices=ShareScope.choices, default=ShareScope.LEADERBOARD)
    attempt_ids = models.JSONField(default=list, blank=True)
    data_version = models.CharField(max_length=100)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["created_by", "created_at"], name="share_link_by_user")]

    def __str__(self) -> str:
        return f"share link {self.pk} of {self.benchmark_id}"


class SearchSource(models.TextChoices):
    MESSAGE = "message", "trajectory message"
    RESPONSE = "response", "response"
    REASONING = "reasoning", "judge reasoning"


class SearchText(models.Model):
    """A searchable piece of an attempt's text: one trajectory message, or its final response (`runs.search`).

    Search needs each message's text (with its tool calls as the page shows them) cut in pieces and
    filed by benchmark, run and model; the ingest writes these rows in its own transaction, `manage.py search_rebuild`
    rebuilds them. A message longer than `runs.search.PIECE` characters is cut into overlapping
    pieces (`piece` 0, 1, ...): every query of up to `runs.search.MAX_QUERY` characters lies whole in
    one of them. Judge reasoning is walked where it is stored and looked up through ReasoningText.
    Benchmark, run and model are copies of the attempt's, without constraints (see AttemptRollup).
    """

    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="+", db_index=False)
    benchmark = models.ForeignKey(
        Benchmark, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False)
    model = models.ForeignKey(
        AgentModel, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    source = models.CharField(max_length=10, choices=SearchSource.choices)
    thread = models.PositiveIntegerField(null=True, blank=True)
    message = models.PositiveIntegerField(null=True, blank=True)
    #: the dialogue turn a message belongs to (the dialogue viewer's anchor), when the trajectory says
    turn = models.PositiveIntegerField(null=True, blank=True)
    piece = models.PositiveIntegerField(default=0)
    text = models.TextField()

    class Meta:
        # by attempt: rebuilds replace an attempt's rows. The two walk indexes give a search the first rows of a
        # source in id order, by benchmark or by run, without reading their text (runs.search._walk_chunk); the
        # search reads candidates with plain index scans off (runs.search._plan), so they cannot tempt the
        # planner to walk every message row instead of the trigram index's few candidates
        indexes = [
            models.Index(fields=["attempt"], name="search_text_by_attempt"),
            models.Index(fields=["benchmark", "source", "id"], name="search_text_walk"),
            models.Index(fields=["run", "source", "id"], name="search_text_run_walk"),
        ]


class ReasoningText(models.Model):
    """A verdict's judge reasoning as the search's trigram index holds it (PostgreSQL; `runs.search_index`).

    Copied from the verdict table after the verdicts' import has committed, by a background step that works
    through ReasoningPending, so an import does not pay for the index (CJK reasoning makes about one trigram a
    character: two thirds of an import's time, docs/performance.md "Ingest"). No constraint to the verdict or
    the attempt: a trigger on the verdict table (migration 0018) deletes these rows with their verdicts, and a
    search checks every candidate against the verdict's own text."""

    verdict_id = models.BigIntegerField(primary_key=True)
    #: the verdict's attempt: a catch-up replaces an attempt's rows
    attempt_id = models.BigIntegerField(db_index=True)
    text = models.TextField()


class ReasoningPending(models.Model):
    """An attempt whose verdicts' reasoning ReasoningText may not hold as it is: listed by the writers of verdicts
    (`runs.search_index.reasoning_changed`, in their transaction, so it appears when they commit) and by the
    verdict table's update trigger (migration 0018); `runs.search_index.reasoning_index_catch_up` works them off.
    By attempt, not by verdict: an import lists a few thousand rows, not a million."""

    attempt_id = models.BigIntegerField(primary_key=True)
