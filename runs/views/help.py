"""Help pages: the portal's own account of every metric, open to anyone a page links from it
(share-link viewers included), since it holds definitions only."""

from django.shortcuts import render

from runs.access import blind_safe
from runs.help_pages import metrics_help


@blind_safe  # definitions only: every role, and share-link viewers, read them
def metrics(request):
    """How every number is computed (docs/metrics.md), one anchor per section."""
    return render(request, "runs/help/metrics.html", {"page": metrics_help()})
