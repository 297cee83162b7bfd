/* SPDX-License-Identifier: MIT */
/*
 * valloc.c - the mem backend's value allocator (see valloc.h).
 *
 * Two ends of one reservation. Page runs (blocks above 32 KiB) come from
 * its start: a free run is found in bins of sizes (sixteen per power of
 * two of pages, a bitmap over them, so finding one is a few bit scans:
 * the two-level segregated fit of TLSF; a few runs of the request's own
 * bin are tried first, as they are the closest in size), else carved at
 * the front. A freed run merges with free neighbours and, when it
 * reaches the front, moves the front back, so space freed by one size
 * serves any other and storing and deleting 64 MiB values in a namespace
 * that holds two takes the same pages over and over. A free run keeps its
 * size and bin links in its own first page and its first page's number
 * in the last bytes of its last page; a bit per page marks the two ends,
 * which is how a freed run finds its neighbours. Runs in use carry
 * nothing: a 2 MiB value takes 512 pages, no more.
 *
 * Small blocks come from slabs of pages carved down from the end, a slab
 * per class at a time and the slab a whole number of blocks (at least
 * NKV_VALLOC_SLAB bytes), so a small block never sits between two runs
 * that could merge. A class's free blocks form a list through their
 * first word, reused by the same class only.
 *
 * The helper thread keeps NKV_VALLOC_AHEAD bytes past the front (an
 * eighth of a small reservation) and a quarter of that below the top
 * populated with MADV_POPULATE_WRITE, which faults pages in without
 * touching their contents, so it may run beside Stores writing just
 * beside it. Kernels before 5.14 lack it: the helper then stops and pages
 * fault on first touch, as with malloc (still no heap growth). Freed
 * pages stay populated for the next block.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "valloc.h"

#define NKV_VALLOC_PAGE 4096ull
#define NKV_VALLOC_AHEAD (8ull << 20)	/* populated past the front */
#define NKV_VALLOC_TINY 256u		/* 16-byte steps up to here */
#define NKV_VALLOC_CLASSES (16 + 7 * 8)	/* then 8 per power of two to 32 KiB */
#define NKV_VALLOC_SLAB (16ull << 10)	/* a class takes pages this many at least */
#define NKV_VALLOC_SL 16u		/* bins per power of two of pages */
#define NKV_VALLOC_FL 48u		/* 2^51 pages: more than any reservation */
#define NKV_VALLOC_SCAN 16		/* runs of a bin tried before the front */
#define NKV_VALLOC_NONE UINT64_MAX	/* no pages */

/* A free page run's head, in its first page. */
struct nkv_valloc_run {
	uint64_t pages;
	struct nkv_valloc_run *prev, *next;	/* in its bin */
};

struct nkv_valloc_class {
	void *free;		/* freed blocks, linked through their first word */
	uint8_t *cur, *end;	/* the rest of the class's newest slab */
};

struct nkv_valloc {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* the helper waits here */
	uint8_t *base;
	uint64_t size;			/* reserved bytes */
	uint64_t npages;
	uint64_t *edge;			/* a bit per page: an end of a free run */
	uint64_t ahead, ahead_top;	/* populated past the front, below the top */
	pthread_t helper;
	/* Under lock: */
	uint64_t lo;			/* pages below are runs' (the front) */
	uint64_t hi;			/* pages from here on are slabs' (the top) */
	uint64_t faulted;		/* bytes [0, faulted) populated */
	uint64_t top_from;		/* bytes [top_from, size) populated */
	uint64_t caught_up, live, free_pages;
	int stop;
	uint64_t fl_map;		/* bit f: some bin of level f has a run */
	uint16_t sl_map[NKV_VALLOC_FL];	/* bit s: bin f * SL + s has a run */
	struct nkv_valloc_run *bins[NKV_VALLOC_FL * NKV_VALLOC_SL];
	struct nkv_valloc_class cls[NKV_VALLOC_CLASSES];
};

/* floor(log2(v)), v > 0 */
static unsigned nkv_valloc_log2(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

/* ---- sizes ---- */

/* The class of a small request (len <= NKV_VALLOC_SMALL_MAX). */
static unsigned nkv_valloc_class(uint64_t len, uint64_t *size)
{
	unsigned k;
	uint64_t step;

	if (len <= NKV_VALLOC_TINY) {
		*size = len <= 16 ? 16 : (len + 15) & ~15ull;
		return (unsigned)(*size / 16 - 1);
	}
	k = nkv_valloc_log2(len - 1);		/* len in (2^k, 2^(k+1)], k 8..14 */
	step = (1ull << k) / 8;
	*size = (len + step - 1) / step * step;	/* 9..16 steps */
	return 16 + (k - 8) * 8 + (unsigned)(*size / step - 9);
}

uint64_t nkv_valloc_block(uint64_t len)
{
	uint64_t size;

	if (len > NKV_VALLOC_SMALL_MAX)
		return (len + NKV_VALLOC_PAGE - 1) & ~(NKV_VALLOC_PAGE - 1);
	nkv_valloc_class(len, &size);
	return size;
}

/* The bin whose sizes hold a run of n pages. */
static unsigned nkv_valloc_bin(uint64_t n)
{
	unsigned k;

	if (n < NKV_VALLOC_SL)
		return (unsigned)n;	/* one size per bin */
	k = nkv_valloc_log2(n);
	return (k - 3) * NKV_VALLOC_SL + (unsigned)((n >> (k - 4)) - NKV_VALLOC_SL);
}

/* The first bin whose every run holds n pages. */
static unsigned nkv_valloc_bin_up(uint64_t n)
{
	if (n < NKV_VALLOC_SL)
		return (unsigned)n;
	return nkv_valloc_bin(n + (1ull << (nkv_valloc_log2(n) - 4)) - 1);
}

/* ---- free page runs ---- */

static uint8_t *nkv_valloc_page(struct nkv_valloc *a, uint64_t i)
{
	return a->base + i * NKV_VALLOC_PAGE;
}

static uint64_t nkv_valloc_index(struct nkv_valloc *a, const void *p)
{
	return (uint64_t)((const uint8_t *)p - a->base) / NKV_VALLOC_PAGE;
}

static int nkv_valloc_edge(struct nkv_valloc *a, uint64_t i)
{
	return (int)(a->edge[i / 64] >> (i % 64) & 1);
}

static void nkv_valloc_mark(struct nkv_valloc *a, uint64_t i, int on)
{
	if (on)
		a->edge[i / 64] |= 1ull << (i % 64);
	else
		a->edge[i / 64] &= ~(1ull << (i % 64));
}

/* Where the first page's number of the free run ending at page i lives. */
static uint64_t *nkv_valloc_foot(struct nkv_valloc *a, uint64_t i)
{
	return (uint64_t *)(nkv_valloc_page(a, i + 1) - sizeof(uint64_t));
}

static void nkv_valloc_run_add(struct nkv_valloc *a, uint64_t first, uint64_t n)
{
	struct nkv_valloc_run *r = (struct nkv_valloc_run *)nkv_valloc_page(a, first);
	unsigned b = nkv_valloc_bin(n);

	r->pages = n;
	r->prev = NULL;
	r->next = a->bins[b];
	if (r->next)
		r->next->prev = r;
	a->bins[b] = r;
	a->sl_map[b / NKV_VALLOC_SL] |= (uint16_t)(1u << (b % NKV_VALLOC_SL));
	a->fl_map |= 1ull << (b / NKV_VALLOC_SL);
	*nkv_valloc_foot(a, first + n - 1) = first;
	nkv_valloc_mark(a, first, 1);
	nkv_valloc_mark(a, first + n - 1, 1);
	a->free_pages += n;
}

static void nkv_valloc_run_del(struct nkv_valloc *a, struct nkv_valloc_run *r)
{
	uint64_t first = nkv_valloc_index(a, r);
	unsigned b = nkv_valloc_bin(r->pages);

	if (r->prev)
		r->prev->next = r->next;
	else
		a->bins[b] = r->next;
	if (r->next)
		r->next->prev = r->prev;
	if (!a->bins[b]) {
		a->sl_map[b / NKV_VALLOC_SL] &= (uint16_t)~(1u << (b % NKV_VALLOC_SL));
		if (!a->sl_map[b / NKV_VALLOC_SL])
			a->fl_map &= ~(1ull << (b / NKV_VALLOC_SL));
	}
	nkv_valloc_mark(a, first, 0);
	nkv_valloc_mark(a, first + r->pages - 1, 0);
	a->free_pages -= r->pages;
}

/* A run in the first non-empty bin from b on, or NULL. */
static struct nkv_valloc_run *nkv_valloc_find(struct nkv_valloc *a, unsigned b)
{
	unsigned fl = b / NKV_VALLOC_SL;
	uint32_t sm = a->sl_map[fl] & (~0u << (b % NKV_VALLOC_SL));

	if (!sm) {
		uint64_t fm = fl + 1 < NKV_VALLOC_FL ? a->fl_map & (~0ull << (fl + 1)) : 0;

		if (!fm)
			return NULL;
		fl = (unsigned)__builtin_ctzll(fm);
		sm = a->sl_map[fl];
	}
	return a->bins[fl * NKV_VALLOC_SL + (unsigned)__builtin_ctz(sm)];
}

/* A run of at least n pages among the first max of n's own bin (whose
 * runs may be smaller), or NULL. */
static struct nkv_valloc_run *nkv_valloc_scan(struct nkv_valloc *a, uint64_t n, uint64_t max)
{
	struct nkv_valloc_run *r;

	for (r = a->bins[nkv_valloc_bin(n)]; r && r->pages < n && --max; r = r->next)
		;
	return r && r->pages >= n ? r : NULL;
}

/* The first n pages of free run r; the rest stays free. */
static uint64_t nkv_valloc_take(struct nkv_valloc *a, struct nkv_valloc_run *r, uint64_t n)
{
	uint64_t first = nkv_valloc_index(a, r), pages = r->pages;

	nkv_valloc_run_del(a, r);
	if (pages > n)
		nkv_valloc_run_add(a, first + n, pages - n);
	return first;
}

/* n pages from a free run, the closest in size first: one of the first
 * few of n's own bin that fits (all of them when all is set), else one
 * from a bin whose every run fits. */
static uint64_t nkv_valloc_reuse(struct nkv_valloc *a, uint64_t n, int all)
{
	struct nkv_valloc_run *r = nkv_valloc_scan(a, n, all ? UINT64_MAX : NKV_VALLOC_SCAN);

	if (!r && !all)
		r = nkv_valloc_find(a, nkv_valloc_bin_up(n));
	return r ? nkv_valloc_take(a, r, n) : NKV_VALLOC_NONE;
}

/* n pages for a run: reused, else at the front, else any free run. */
static uint64_t nkv_valloc_pages(struct nkv_valloc *a, uint64_t n)
{
	uint64_t first = nkv_valloc_reuse(a, n, 0);

	if (first != NKV_VALLOC_NONE)
		return first;
	if (a->hi - a->lo >= n) {
		first = a->lo;
		a->lo += n;
		return first;
	}
	return nkv_valloc_reuse(a, n, 1);
}

/* n pages for a slab: below the top, else (the two ends have met) any
 * free run. */
static uint64_t nkv_valloc_top(struct nkv_valloc *a, uint64_t n)
{
	uint64_t first;

	if (a->hi - a->lo >= n) {
		a->hi -= n;
		return a->hi;
	}
	first = nkv_valloc_reuse(a, n, 0);
	return first != NKV_VALLOC_NONE ? first : nkv_valloc_reuse(a, n, 1);
}

/* Give back pages [first, first + n), merged with free neighbours. */
static void nkv_valloc_unpages(struct nkv_valloc *a, uint64_t first, uint64_t n)
{
	if (first && nkv_valloc_edge(a, first - 1)) {
		uint64_t left = *nkv_valloc_foot(a, first - 1);

		nkv_valloc_run_del(a, (struct nkv_valloc_run *)nkv_valloc_page(a, left));
		n += first - left;
		first = left;
	}
	if (first + n < a->lo && nkv_valloc_edge(a, first + n)) {
		struct nkv_valloc_run *r = (struct nkv_valloc_run *)nkv_valloc_page(a, first + n);

		nkv_valloc_run_del(a, r);
		n += r->pages;
	}
	if (first + n == a->lo)
		a->lo = first;	/* back into the front */
	else
		nkv_valloc_run_add(a, first, n);
}

/* ---- the helper ---- */

/* Pages [p, p + bytes) were just handed out: count them when the
 * helper had not populated them yet, and wake it once half a lead is
 * used. */
static void nkv_valloc_lead(struct nkv_valloc *a, const uint8_t *p, uint64_t bytes)
{
	uint64_t lo = a->lo * NKV_VALLOC_PAGE, hi = a->hi * NKV_VALLOC_PAGE;
	uint64_t from = (uint64_t)(p - a->base);

	if (from + bytes > a->faulted && from < a->top_from)
		a->caught_up++;
	if ((a->faulted < a->size && lo + a->ahead / 2 > a->faulted) ||
	    (a->top_from && hi < a->top_from + a->ahead_top / 2))
		pthread_cond_signal(&a->cond);
}

/* Populate bytes [from, to) outside the lock. 0, or -1 when the kernel
 * cannot (the helper then stops). */
static int nkv_valloc_populate(struct nkv_valloc *a, uint64_t from, uint64_t to)
{
	int rc;

	pthread_mutex_unlock(&a->lock);
	rc = madvise(a->base + from, to - from, MADV_POPULATE_WRITE);
	pthread_mutex_lock(&a->lock);
	return rc ? -1 : 0;
}

/* Keep [faulted, front + ahead) and [top - ahead_top, top_from) populated. */
static void *nkv_valloc_helper(void *arg)
{
	struct nkv_valloc *a = arg;

	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		uint64_t lo = a->lo * NKV_VALLOC_PAGE + a->ahead, hi = a->hi * NKV_VALLOC_PAGE;
		uint64_t from = a->faulted, to = a->top_from;

		lo = lo < a->size ? lo : a->size;
		hi = hi > a->ahead_top ? hi - a->ahead_top : 0;
		if (from < lo) {
			if (nkv_valloc_populate(a, from, lo))
				break;
			a->faulted = lo;
		} else if (hi < to) {
			if (nkv_valloc_populate(a, hi, to))
				break;
			a->top_from = hi;
		} else {
			pthread_cond_wait(&a->cond, &a->lock);
		}
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* ---- create / destroy ---- */

static void *nkv_valloc_map(uint64_t size)
{
	/* Address space only: pages cost nothing until faulted in. */
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static uint64_t nkv_valloc_edge_bytes(const struct nkv_valloc *a)
{
	return ((a->npages + 63) / 64 * 8 + NKV_VALLOC_PAGE - 1) & ~(NKV_VALLOC_PAGE - 1);
}

static void nkv_valloc_free(struct nkv_valloc *a)
{
	if (a->base)
		munmap(a->base, a->size);
	if (a->edge)
		munmap(a->edge, nkv_valloc_edge_bytes(a));
	free(a);
}

/* A small namespace needs no 8 MiB lead: an eighth of what it reserves
 * for its start capacity will do (sized from that, not from the room to
 * grow, so a namespace that may grow faults in no more ahead). */
static void nkv_valloc_leads(struct nkv_valloc *a, uint64_t size)
{
	uint64_t mask = NKV_VALLOC_PAGE - 1;

	a->ahead = size / 8 < NKV_VALLOC_AHEAD ? (size / 8 + mask) & ~mask : NKV_VALLOC_AHEAD;
	a->ahead_top = (a->ahead / 4 + mask) & ~mask;
}

struct nkv_valloc *nkv_valloc_create(uint64_t capacity, uint64_t max_block)
{
	return nkv_valloc_create_grow(capacity, capacity, max_block);
}

struct nkv_valloc *nkv_valloc_create_grow(uint64_t capacity, uint64_t max_capacity,
					  uint64_t max_block)
{
	struct nkv_valloc *a = calloc(1, sizeof(*a));
	uint64_t blk = nkv_valloc_block(max_block);
	uint64_t size = 2 * ((max_capacity > capacity ? max_capacity : capacity) + blk);
	int rc;

	if (!a)
		return NULL;
	a->size = (size + NKV_VALLOC_PAGE - 1) & ~(NKV_VALLOC_PAGE - 1);
	a->npages = a->size / NKV_VALLOC_PAGE;
	a->base = nkv_valloc_map(a->size);
	a->edge = a->base ? nkv_valloc_map(nkv_valloc_edge_bytes(a)) : NULL;
	if (!a->edge) {
		nkv_valloc_free(a);
		errno = ENOMEM;
		return NULL;
	}
	a->hi = a->npages;
	a->top_from = a->size;
	nkv_valloc_leads(a, 2 * (capacity + blk));
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	rc = pthread_create(&a->helper, NULL, nkv_valloc_helper, a);
	if (rc) {
		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		nkv_valloc_free(a);
		errno = rc;
		return NULL;
	}
	return a;
}

void nkv_valloc_destroy(struct nkv_valloc *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = 1;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->helper, NULL);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	nkv_valloc_free(a);
}

/* ---- get / put ---- */

/* A new slab for class c of size-byte blocks: a whole number of blocks
 * in whole pages (size / gcd(size, page) pages hold such a number),
 * NKV_VALLOC_SLAB bytes or more when there is room. */
static int nkv_valloc_slab(struct nkv_valloc *a, struct nkv_valloc_class *c, uint64_t size)
{
	unsigned tz = (unsigned)__builtin_ctzll(size);
	uint64_t unit = size >> (tz < 12 ? tz : 12);
	uint64_t n = (NKV_VALLOC_SLAB / NKV_VALLOC_PAGE + unit - 1) / unit * unit;
	uint64_t first = nkv_valloc_top(a, n);

	if (first == NKV_VALLOC_NONE)
		first = nkv_valloc_top(a, n = unit);
	if (first == NKV_VALLOC_NONE)
		return -1;
	c->cur = nkv_valloc_page(a, first);
	c->end = c->cur + n * NKV_VALLOC_PAGE;
	nkv_valloc_lead(a, c->cur, n * NKV_VALLOC_PAGE);
	return 0;
}

static void *nkv_valloc_small(struct nkv_valloc *a, uint64_t len)
{
	uint64_t size;
	struct nkv_valloc_class *c = &a->cls[nkv_valloc_class(len, &size)];
	void *p = c->free;

	if (p) {
		c->free = *(void **)p;
	} else if (c->cur < c->end || !nkv_valloc_slab(a, c, size)) {
		p = c->cur;
		c->cur += size;
	}
	if (p)
		a->live += size;
	return p;
}

static void *nkv_valloc_large(struct nkv_valloc *a, uint64_t len)
{
	uint64_t size = nkv_valloc_block(len);
	uint64_t first = nkv_valloc_pages(a, size / NKV_VALLOC_PAGE);
	uint8_t *p;

	if (first == NKV_VALLOC_NONE)
		return NULL;
	p = nkv_valloc_page(a, first);
	a->live += size;
	nkv_valloc_lead(a, p, size);
	return p;
}

void *nkv_valloc_get(struct nkv_valloc *a, uint64_t len)
{
	void *p;

	if (len > a->size)
		return NULL;	/* and no overflow below */
	pthread_mutex_lock(&a->lock);
	p = len > NKV_VALLOC_SMALL_MAX ? nkv_valloc_large(a, len) : nkv_valloc_small(a, len);
	pthread_mutex_unlock(&a->lock);
	return p;
}

void nkv_valloc_put(struct nkv_valloc *a, void *p, uint64_t len)
{
	uint64_t size = nkv_valloc_block(len);

	if (!p)
		return;
	pthread_mutex_lock(&a->lock);
	if (len > NKV_VALLOC_SMALL_MAX) {
		nkv_valloc_unpages(a, nkv_valloc_index(a, p), size / NKV_VALLOC_PAGE);
	} else {
		struct nkv_valloc_class *c = &a->cls[nkv_valloc_class(len, &size)];

		*(void **)p = c->free;
		c->free = p;
	}
	a->live -= size;
	pthread_mutex_unlock(&a->lock);
}

void nkv_valloc_stats(struct nkv_valloc *a, struct nkv_valloc_stats *st)
{
	pthread_mutex_lock(&a->lock);
	st->reserved = a->size;
	st->top = (a->npages - a->hi) * NKV_VALLOC_PAGE;
	st->front = a->lo * NKV_VALLOC_PAGE + st->top;
	st->faulted = a->faulted;
	st->top_faulted = a->size - a->top_from;
	st->caught_up = a->caught_up;
	st->live = a->live;
	st->free = a->free_pages * NKV_VALLOC_PAGE;
	pthread_mutex_unlock(&a->lock);
}

/* ---- invariants (tests) ---- */

/* One free run: in its bin, below the front, both ends marked, its foot
 * right, and no free neighbour (it would have merged). */
static int nkv_valloc_check_run(struct nkv_valloc *a, const struct nkv_valloc_run *r, unsigned b)
{
	uint64_t first = nkv_valloc_index(a, r), last = first + r->pages - 1;

	if (!r->pages || nkv_valloc_bin(r->pages) != b || last >= a->lo)
		return -2;
	if (!nkv_valloc_edge(a, first) || !nkv_valloc_edge(a, last) ||
	    *nkv_valloc_foot(a, last) != first)
		return -3;
	if ((first && nkv_valloc_edge(a, first - 1)) || last + 1 == a->lo ||
	    nkv_valloc_edge(a, last + 1))
		return -4;
	return r->next && r->next->prev != r ? -5 : 0;
}

/* Every bin's runs, the bin bitmaps, and the count of marks and pages. */
static int nkv_valloc_check_bins(struct nkv_valloc *a)
{
	uint64_t pages = 0, marks = 0, i;
	unsigned b;
	int rc;

	for (b = 0; b < NKV_VALLOC_FL * NKV_VALLOC_SL; b++) {
		const struct nkv_valloc_run *r = a->bins[b];
		int mapped = a->sl_map[b / NKV_VALLOC_SL] >> (b % NKV_VALLOC_SL) & 1;

		if (mapped != !!r || (mapped && !(a->fl_map >> (b / NKV_VALLOC_SL) & 1)))
			return -6;
		if (r && r->prev)
			return -5;
		for (; r; r = r->next) {
			rc = nkv_valloc_check_run(a, r, b);
			if (rc)
				return rc;
			pages += r->pages;
			marks += r->pages == 1 ? 1 : 2;
		}
	}
	for (i = 0; i < (a->npages + 63) / 64; i++)
		marks -= (uint64_t)__builtin_popcountll(a->edge[i]);
	return pages != a->free_pages || marks ? -7 : 0;
}

int nkv_valloc_check(struct nkv_valloc *a)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = a->lo > a->hi || a->hi > a->npages ? -1 : nkv_valloc_check_bins(a);
	pthread_mutex_unlock(&a->lock);
	return rc;
}
