"""gunicorn's settings for the portal's web process (read from the working directory, or `-c gunicorn.conf.py`).

Threads, not only processes: a request spends most of its time waiting on PostgreSQL and Redis
(a warm leaderboard is a few milliseconds of Python around five round trips), and a sync worker
waits idle meanwhile. With 2 sync workers on a shared 2-core machine the web server used 0.26-0.82
cores while 32 clients queued up to 1.2 s (docs/performance.md, "The web process");
threads let each worker serve other requests while one waits. Each thread keeps its own database
connection (DB_CONN_MAX_AGE), so workers x threads connections at most.
"""

import os

workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "8"))
worker_class = "gthread" if threads > 1 else "sync"
