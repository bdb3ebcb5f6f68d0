"""Crawl defaults: every tunable number of the crawler lives here, by name.

The command line (``crawler/commands.py``) overrides some of them per crawl; the rest are read
here by the components that need them, never written as literals inside functions.
"""

from __future__ import annotations

from websift.crawler.identity import DEFAULT_USER_AGENT, agent_token
from websift.ranking.opic import DEFAULT_DISCOVERY_SHARE as DEFAULT_OPIC_DISCOVERY_SHARE
from websift.ranking.opic import DEFAULT_FOCUS_SHARE as DEFAULT_OPIC_FOCUS_SHARE
from websift.ranking.opic import DEFAULT_WINDOW as DEFAULT_OPIC_WINDOW

# Identity: the full User-Agent (--user-agent) and its product token, which robots.txt groups
# are matched against (crawler/identity.py).
USER_AGENT = DEFAULT_USER_AGENT
ROBOTS_AGENT = agent_token(USER_AGENT)  # "websift"

# ---------------------------------------------------------------- politeness (per host)
DEFAULT_DELAY = 1.0  # seconds between request starts to one host (--delay)
DEFAULT_CONCURRENCY_PER_HOST = 1  # requests in flight per host (--concurrency-per-host)
MAX_DELAY = 60.0  # no delay in force (Crawl-delay, adaptive, learned) exceeds this
MAX_CRAWL_DELAY = 30.0  # a robots.txt Crawl-delay above this is capped to it
# Adaptive delay: at least this factor times the host's observed response time (EWMA) divided
# by the concurrency, so a slow server is asked less often (AutoThrottle's idea, websift's rule).
ADAPTIVE_DELAY_FACTOR = 1.0
RESPONSE_TIME_EWMA = 0.3  # weight of the newest observation in the response-time average
# 429 / 503 back-off: Retry-After when given (capped), else BACKOFF_BASE * 2**(tries-1).
BACKOFF_BASE = 2.0
MAX_BACKOFF = 300.0
RETRY_TIMES = 2  # retries of one URL after 429/503/timeouts/connection errors
RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
BACKOFF_STATUSES = frozenset({429, 503})

# ---------------------------------------------------------------- robots.txt
ROBOTS_TTL = 24 * 3600.0  # a robots.txt fetched less than this long ago is reused from the store

# ---------------------------------------------------------------- limits and scope
DEFAULT_MAX_PAGES = 1000  # pages fetched per `websift crawl` run (--max-pages)
DEFAULT_MAX_DEPTH = 16  # link hops from a seed (--max-depth)
MAX_PAGES_PER_HOST = 20000  # spider-trap limit: pages fetched per host in one run
DOWNLOAD_MAXSIZE = 8 * 1024 * 1024  # bytes; a larger response is aborted, counted 'too_large'
DOWNLOAD_WARNSIZE = 0  # Scrapy's warning threshold (0: off; the cap above is what counts)
# A response's status line and headers: at most this many bytes and header lines (a larger head
# drops the connection and counts 'too_large'; crawler/http_client.py).  Browsers stop near
# 256 KiB; real pages' heads are a few KiB.
MAX_RESPONSE_HEAD_BYTES = 256 * 1024
MAX_RESPONSE_HEADERS = 500
DOWNLOAD_TIMEOUT = 20.0  # seconds per request
MAX_REDIRECTS = 5  # redirect hops from the URL a link named; more counts 'too_many_redirects'
CONCURRENT_REQUESTS = 64  # total in flight over all hosts (Scrapy's global cap)

# ---------------------------------------------------------------- crash safety (group commit)
COMMIT_EVERY_STEPS = 32  # crawl steps per SQLite transaction (one WARC fsync per commit)
COMMIT_EVERY_SECONDS = 1.0  # an open batch is committed at least this often

# ---------------------------------------------------------------- page content
ANCHOR_MAX_CHARS = 200  # anchor text kept per link, after whitespace is collapsed
NOFOLLOW_RELS = frozenset({"nofollow", "ugc", "sponsored"})
# SimHash is computed over the first this many characters of a page's text: enough to tell
# near duplicates apart, and a 400 kB manual page does not cost 20 ms of shingle hashing.
SIMHASH_MAX_CHARS = 65536
URL_CACHE_SIZE = 500_000  # URLs whose ID and scope verdict a crawl run remembers

# ---------------------------------------------------------------- DNS (the scope's address check)
# A host's addresses are looked up in these many threads, never on the reactor thread: one slow
# resolver then delays that host's URLs only (crawler/dns.py).
DNS_THREADS = 8
DNS_TTL = 600.0  # seconds a host's address verdict is trusted before it is looked up again
DNS_FAILURE_TTL = 60.0  # the same for a name that did not resolve (tried again sooner)
DNS_CACHE_SIZE = 65536  # hosts whose address verdict a crawl keeps (least recently used go)
DNS_PARKED_MAX = 200_000  # links waiting for their host's verdict; beyond, left for a later link
DNS_CLOSE_WAIT = 5.0  # seconds a run's end waits for lookups still running (their links enter)

# ---------------------------------------------------------------- frontier (OPIC)
DEFAULT_STRATEGY = "greedy"  # greedy | random | cycle (OPIC section 3.1)
# The virtual page's cash is handed back every this many reads (section 2.1: "not distributed
# all at once"); a payout is O(1) (dividend levels, ranking.opic.LazyOpicState).
VIRTUAL_EVERY = 32
RANDOM_SEED = 0  # the Random strategy's generator seed (reproducible comparisons)
# One schedule for discovery and refresh (section 3.3): each payout of the virtual page gives
# FOCUS_SHARE to the focus pages (--focus / --focus-topic; none without a focus), DISCOVERY_SHARE
# of the rest to unread pages, what is left to every live page (refresh); Greedy then picks the
# richest page, unread or read.  Discovery share 0 is refresh only (`websift recrawl`).
DISCOVERY_SHARE = DEFAULT_OPIC_DISCOVERY_SHARE  # 0.5 (--discovery-share)
FOCUS_SHARE = DEFAULT_OPIC_FOCUS_SHARE  # 0.3 (--focus-share)
OPIC_WINDOW = DEFAULT_OPIC_WINDOW  # 4.0: Interpolation window T, in clock units (--window)
# A fetched page may be fetched again (as a refresh candidate) only this many seconds after
# its last fetch (--min-refetch-interval) ...
MIN_REFETCH_INTERVAL = 3600.0
# ... stretched for pages seen unchanged: interval * (1 + STRETCH * (1 - changes/refetches)),
# so a page that never changed waits 24 h, one that changed at every refetch 1 h, and a page
# fetched once (no evidence yet) the minimum.
REFETCH_UNCHANGED_STRETCH = 23.0

# ---------------------------------------------------------------- recrawl
# Refresh priority = cash since the last fetch * (1 + CHANGE_WEIGHT * change_count/fetch_count).
RECRAWL_CHANGE_WEIGHT = 1.0
DEFAULT_RECRAWL_BUDGET = 100

# ---------------------------------------------------------------- progress
PROGRESS_INTERVAL = 1.0  # seconds between progress lines

# ---------------------------------------------------------------- running for weeks
# A continuous crawl (--continuous) with nothing due looks again this often (seconds).
CONTINUOUS_POLL = 1.0
# The live figures (crawls row JSON, served at /stats and /metrics) are written with each batch
# commit, and at least this often while the crawl waits (seconds).
LIVE_EVERY = 1.0
# A run whose figures are older than this (and that never finished) was killed, not running.
LIVE_STALE_AFTER = 30.0
RATE_WINDOW = 60.0  # seconds over which the recent fetch rate is measured
# The crawling process's garbage collector: generation 0 is collected after this many tracked
# objects are made and kept (CPython's default is 700).  A page's objects (its request and
# response, the Deferreds and delayed calls around them, its parse) live for tens to hundreds of
# ms, longer than 700 of them take to make, so at the default they were promoted to generation 2
# and a full collection came every 2-3 s, walking the whole heap (150,000-220,000 objects in a
# crawl of a 100,000-page web): 8% of a crawl's CPU, pauses up to 200 ms.  At 20,000 most die
# young (docs/crawling.md, "The garbage collector").
GC_YOUNG_OBJECTS = 20_000

# ---------------------------------------------------------------- shared frontier (Redis)
# Several crawler processes on one frontier (--frontier redis://...; crawler/redis_frontier.py).
FRONTIER_TIMEOUT = 5.0  # seconds a Redis call may take before the frontier counts as lost
FRONTIER_RETRIES = 3  # a failed Redis call is tried again this many times ...
FRONTIER_RETRY_BASE = 0.05  # ... after an exponential backoff from this many seconds ...
FRONTIER_RETRY_CAP = 0.4  # ... up to this many (then the crawler stops: frontier lost)
# A crawler holds a host for this long unless it renews the lease (every third of it); a dead
# crawler's hosts go to others after at most this.
FRONTIER_LEASE_TTL = 15.0
FRONTIER_MAX_HOSTS = 64  # hosts one crawler holds at once (the rest are left to the others)
FRONTIER_MAINTAIN_EVERY = 0.25  # seconds between lease renewals/scans and global load reads
FRONTIER_PEEK_EVERY = 0.5  # a leased host's best pending page is looked up at least this often
# A host (or the virtual page) remembers the transfers it applied this long, so a delivery
# repeated after a crash, or by a second process, is never applied twice.
FRONTIER_APPLIED_KEEP = 3600.0
FRONTIER_SWEEP_EVERY = 5.0  # seconds between sweeps of outboxes a crashed crawler left
FRONTIER_STATUS_TRIES = 5  # snapshots `frontier status` tries while hosts keep appearing

# ---------------------------------------------------------------- the web's own signals
# Sitemaps (crawler/sitemaps.py), feeds (crawler/feeds.py) and lastmod evidence move OPIC cash
# (crawler/signals.py); --no-signals turns them off.  The embedded frontier only.
SITEMAP_MAX_URLS = 50_000  # the protocol's limits per file ...
SITEMAP_MAX_BYTES = 50 * 1024 * 1024  # ... uncompressed
SITEMAP_MAX_FILES = 1000  # sitemap files (index children included) one host may name
SITEMAP_INTERVAL = 6 * 3600.0  # a sitemap is read again (conditional GET) this often
# A page a sitemap says changed (lastmod after its last fetch) is a refresh candidate after
# (1 - trust) of its remaining refetch wait, and gets LASTMOD_GRANT * trust times a live
# page's mean cash (1 / live pages) from the virtual page.  trust: the host's share of
# lastmod-driven refetches that found the page changed, Beta(1, 1) prior ((changed+1)/(n+2)).
LASTMOD_GRANT = 2.0
# A read page whose sitemap lastmod is not after its last fetch waits (1 + LASTMOD_UNCHANGED_
# STRETCH * trust) times its refetch interval (Frontier.defer): the site's word that it did not
# change stands for a refetch, as long as the host's lastmod is trusted.
LASTMOD_UNCHANGED_STRETCH = 3.0
# A host's lastmod is on probation for its first LASTMOD_PROBES checks (one read of its sitemap
# asks for at most that many lastmod-driven refetches); past them, a trust under
# LASTMOD_MIN_TRUST allows one per read (a lying host costs at most one wasted fetch per sitemap
# read, and can win its trust back).
LASTMOD_PROBES = 4
LASTMOD_MIN_TRUST = 0.5
# A feed's new item enters the frontier with FEED_ITEM_GRANT times a live page's mean cash.
FEED_ITEM_GRANT = 4.0
# A site owner's pushed URL (IndexNow; crawler/pushes.py) gets PUSH_GRANT times a live page's
# mean cash and, when read before, its refetch wait cancelled; PUSH_BATCH pushes per read.
PUSH_GRANT = 4.0
PUSH_BATCH = 1000
# The virtual page may advance grants up to this much cash (it goes below 0 and its next
# payouts are smaller by as much: Lemma 2.2 holds throughout).
SIGNAL_ADVANCE_LIMIT = 0.05
# A feed is read again after an adaptive interval: halved when it had new items, doubled when
# not, within these bounds (seconds).
FEED_MIN_INTERVAL = 600.0
FEED_MAX_INTERVAL = 86400.0
FEED_MAX_BYTES = 4 * 1024 * 1024  # a larger feed is refused (counted)
FEED_MAX_ITEMS = 1000  # items read per feed answer
FEEDS_PER_HOST = 8  # feeds one host may have
HREFLANG_MAX = 100  # language alternates recorded per page
SIGNALS = False  # CrawlConfig's default; `websift crawl` has them on (embedded frontier)

# A partitioned crawl (crawler/partitions.py, crawler/mailbox.py): virtual partitions of the
# hosts, and how long a crawler's lease on one lives without renewal (renewed every third)
PARTITIONS = 64
PARTITION_LEASE_TTL = 6.0
# after a Redis restart, how long the partitions of a crawler alive when Redis stopped wait for it
# to register again (None: crawler.partitions.REJOIN_WAIT leases)
PARTITION_REJOIN: float | None = None
