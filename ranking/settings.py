"""Ranking defaults: every tunable number of ranking/ lives here, by name."""

from __future__ import annotations

# PageRank (Page, Brin, Motwani, Winograd 1998; Web Graph Analyzer, Definition 4).
DAMPING = 0.85  # c: probability of following a link rather than jumping (Google's choice)
TOLERANCE = 1e-10  # L1 distance between successive iterates at which power iteration stops
MAX_ITERATIONS = 1000  # a safety net; with c = 0.85 and tol 1e-10 about 140 are needed
DANGLING_POLICY = "teleport"  # "teleport" (Google matrix) or "paper1998" (remove, add back)

# Monte Carlo PageRank (Web Graph Analyzer, Algorithm 2).
MC_WALKS_PER_PAGE = 10  # m: complete-path walks started from every page
MC_TOP_PAGES = 100  # how many top pages the MC-vs-power-iteration error is reported on

# Topic-sensitive PageRank (Haveliwala 2002) and its term models.
TOPIC_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # a topic name is also a file name
TOPIC_MAX_TERMS = 50_000  # most frequent terms kept per topic term model
TOPIC_SMOOTHING = 0.5  # Jelinek-Mercer lambda: weight of the all-topics model in P(q_i | T_k)

# Graph analysis (Web Graph Analyzer, section 3).
RESTRICTED_LEVELS = 3  # l of the restricted PageRank over the first l levels
PLOT_DPI = 110

# PageRank speed: the power iteration's mat-vec runs on row blocks in parallel threads.
THREADS = 2  # threads per power-iteration step (the mat-vec releases the GIL); 2 cores here
LINKS_PER_THREAD = 200_000  # a block gets at least this many links, or the graph stays whole
EXTRAPOLATION_ORDER = 6  # d of power extrapolation (Haveliwala et al. 2003); 0 turns it off
EXTRAPOLATION_START = 20  # first step whose iterate is kept for an extrapolation d steps later
EXTRAPOLATION_EVERY = 12  # steps between kept iterates (d of them lead to the extrapolation)
BLOCKS_PER_THREAD = 4  # row blocks per thread, taken from a shared counter (a stalled thread
# then holds up one small block, not half of the step)
GATHER_CHUNK = 1 << 16  # links per np.take call when gathering transition weights
# The dangling-node policies ranking.pagerank.Dangling implements (named here so the command
# line can offer them without importing scipy).
DANGLING_POLICIES = ("teleport", "paper1998")

# PageRank on Dask (ranking/dask_engine.py): the link matrix in row blocks on the workers.
DASK_ENGINES = ("embedded", "dask")  # `websift rank --engine`; embedded is the default
DASK_LOCAL_WORKERS = 2  # worker processes of the LocalCluster started without --scheduler
DASK_CONNECT_TIMEOUT = 10.0  # seconds to reach a --scheduler (and for its workers to join)
DASK_BLOCKS_PER_WORKER = 2  # row blocks per worker: a restarted worker reloads a small one
DASK_BLOCK_LINKS = 50_000_000  # at most this many links per block (12 bytes each in memory)
DASK_BUCKETS_PER_BLOCK = 8  # node ranges per block when the links are first spilled to disk
DASK_PAIR_CHUNK = 1 << 22  # links of a store sorted into buckets at a time (8 bytes each)
DASK_SCC_MAX_PIVOTS = 64  # forward-backward searches before the giant SCC search gives up
