import os

# One BLAS thread per process, set before numpy loads its BLAS: a request's matrix products are small (a bootstrap
# of a few hundred instances), and BLAS's thread pool on a busy two-core server made each take 8-15 ms instead of
# 0.2 ms (a cold leaderboard 140 ms instead of 27 ms). The web server and the workers run one request per process or
# thread already; an operator's own setting wins.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from ifportal.celery import app as celery_app  # noqa: E402 (after the BLAS setting, which numpy reads on import)

__all__ = ("celery_app",)
