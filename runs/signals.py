"""`benchmarks_written`: sent with `benchmark_ids` once a write that changed those benchmarks' data has committed.

The write services send it (runs.services: on commit, or once at the end of a block of commits) and so does the job
runner once a job has finished (runs.jobs); its receiver warms the caches the change made cold
(runs.cache_warming.after_write, connected in runs.apps). Writers name the event, not the renderer: importing a
write service loads no HTML renderer.
"""

from django.dispatch import Signal

benchmarks_written = Signal()
