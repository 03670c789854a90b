/* alloc: PyTorch's CUDA caching allocator over one rank's tensor
 * allocations, for the memory it reserves beyond what its tensors hold
 * (report.h rep_alloc).
 *
 * The rules of c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x defaults, no
 * max_split_size, no expandable segments):
 *   - a request is rounded up to a multiple of 512 B (kMinBlockSize);
 *   - requests of at most 1 MiB (kSmallSize) use the small pool, larger
 *     ones the large pool;
 *   - the smallest free block of the pool that holds the request is taken
 *     (best fit; ties: the lowest segment and offset), and split when the
 *     rest is at least 512 B (small pool) or more than 1 MiB (large pool);
 *   - without one a segment is reserved (cudaMalloc): 2 MiB for a small
 *     request (kSmallBuffer), 20 MiB for a large one below 10 MiB
 *     (kLargeBuffer, kMinLargeAlloc), else the request rounded up to 2 MiB
 *     (kRoundLarge);
 *   - a freed block returns to its pool and merges with free neighbours of
 *     its segment; segments stay reserved (the cache).
 * A free names no tensor: it releases the youngest live block holding
 * exactly its bytes (rounded), else it gives back that much of the
 * youngest larger one (a part of an allocation freed first, em_split), the
 * block staying until the rest goes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"

#define MIN_BLOCK 512.0
#define SMALL_SIZE 1048576.0
#define SMALL_BUFFER 2097152.0
#define LARGE_BUFFER 20971520.0
#define MIN_LARGE_ALLOC 10485760.0
#define ROUND_LARGE 2097152.0

/* One block: a span of a segment, free or held (used bytes of it). */
typedef struct rep_block {
    int seg;
    double off, size, used;
    int free;
    int prev, next;          /* neighbours in the segment by offset, -1 none */
    long age;                /* allocation order, for the youngest match */
} rep_block;

static int grow(rep_alloc *a)
{
    if (a->nfree_ix > 0)
        return a->free_ix[--a->nfree_ix];
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 256;
        a->b = realloc(a->b, (size_t)a->cap * sizeof *a->b);
        a->free_ix = realloc(a->free_ix, (size_t)a->cap * sizeof *a->free_ix);
        if (!a->b || !a->free_ix)
            abort(); /* out of host memory: nothing sensible to report */
    }
    return a->n++;
}

static void drop(rep_alloc *a, int i)
{
    a->b[i].size = -1; /* unused slot */
    a->free_ix[a->nfree_ix++] = i;
}

void rep_alloc_init(rep_alloc *a)
{
    memset(a, 0, sizeof *a);
}

void rep_alloc_free(rep_alloc *a)
{
    free(a->b);
    free(a->free_ix);
    free(a->seg_small);
    free(a->pool[0]);
    free(a->pool[1]);
    free(a->held);
    memset(a, 0, sizeof *a);
}

static int seg_small(const rep_alloc *a, int seg)
{
    return a->seg_small[seg];
}

/* ---- the index ---------------------------------------------------------------- */

/* A free block in its pool, with the keys the best fit orders by. */
typedef struct rep_free {
    double size, off;
    int seg, i;
} rep_free;

static void reserve(int **v, int *cap, int n)
{
    if (n < *cap)
        return;
    *cap = *cap ? 2 * *cap : 256;
    *v = realloc(*v, (size_t)*cap * sizeof **v);
    if (!*v)
        abort(); /* out of host memory: nothing sensible to report */
}

/* Whether x goes before y in a pool: smaller first, then the lower segment
 * and offset (the best fit's tie rule). */
static int before(const rep_free *x, const rep_free *y)
{
    if (x->size != y->size)
        return x->size < y->size;
    if (x->seg != y->seg)
        return x->seg < y->seg;
    return x->off < y->off;
}

/* The position in pool p of the first entry not before key. */
static int lower_bound(const rep_alloc *a, int p, const rep_free *key)
{
    const rep_free *v = a->pool[p];
    int lo = 0, hi = a->npool[p];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (before(&v[mid], key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static rep_free key_of(const rep_alloc *a, int i)
{
    const rep_block *x = &a->b[i];
    return (rep_free){x->size, x->off, x->seg, i};
}

static void pool_add(rep_alloc *a, int i)
{
    rep_free k = key_of(a, i);
    int p = seg_small(a, k.seg);
    if (a->npool[p] == a->cappool[p]) {
        a->cappool[p] = a->cappool[p] ? 2 * a->cappool[p] : 256;
        a->pool[p] = realloc(a->pool[p], (size_t)a->cappool[p] * sizeof *a->pool[p]);
        if (!a->pool[p])
            abort(); /* out of host memory: nothing sensible to report */
    }
    int at = lower_bound(a, p, &k);
    memmove(&a->pool[p][at + 1], &a->pool[p][at],
            (size_t)(a->npool[p] - at) * sizeof a->pool[p][0]);
    a->pool[p][at] = k;
    a->npool[p]++;
}

/* Remove free block i from its pool (before its size or offset change). */
static void pool_remove(rep_alloc *a, int i)
{
    rep_free k = key_of(a, i);
    int p = seg_small(a, k.seg);
    int at = lower_bound(a, p, &k);
    if (at >= a->npool[p] || a->pool[p][at].i != i)
        abort(); /* the index lost a block: a bug, not an input */
    memmove(&a->pool[p][at], &a->pool[p][at + 1],
            (size_t)(a->npool[p] - at - 1) * sizeof a->pool[p][0]);
    a->npool[p]--;
}

/* The best free block of the pool for `size` bytes, -1 none: the first
 * of the sorted pool that holds it. */
static int best_fit(const rep_alloc *a, double size, int small)
{
    rep_free key = {size, -1, -1, -1};
    int at = lower_bound(a, small, &key);
    return at < a->npool[small] ? a->pool[small][at].i : -1;
}

static void new_segment(rep_alloc *a, double bytes, int small)
{
    double seg = small ? SMALL_BUFFER
                       : bytes < MIN_LARGE_ALLOC ? LARGE_BUFFER
                                                 : ceil(bytes / ROUND_LARGE) * ROUND_LARGE;
    if (a->nseg == a->segcap) {
        a->segcap = a->segcap ? 2 * a->segcap : 64;
        a->seg_small = realloc(a->seg_small, (size_t)a->segcap * sizeof *a->seg_small);
        if (!a->seg_small)
            abort();
    }
    a->seg_small[a->nseg] = small;
    int i = grow(a);
    a->b[i] = (rep_block){a->nseg, 0, seg, 0, 1, -1, -1, 0};
    a->nseg++;
    a->reserved += seg;
    pool_add(a, i);
}

void rep_alloc_malloc(rep_alloc *a, double bytes)
{
    if (!(bytes > 0))
        return;
    double size = ceil(bytes / MIN_BLOCK) * MIN_BLOCK;
    int small = size <= SMALL_SIZE;
    int i = best_fit(a, size, small);
    if (i < 0) {
        new_segment(a, size, small);
        i = best_fit(a, size, small);
    }
    pool_remove(a, i);
    double rest = a->b[i].size - size;
    if (small ? rest >= MIN_BLOCK : rest > SMALL_SIZE) {
        int j = grow(a);
        rep_block *x = &a->b[i]; /* grow may move the array */
        a->b[j] = (rep_block){x->seg, x->off + size, rest, 0, 1, i, x->next, 0};
        if (x->next >= 0)
            a->b[x->next].prev = j;
        x->next = j;
        x->size = size;
        pool_add(a, j);
    }
    rep_block *x = &a->b[i];
    x->free = 0;
    x->used = size;
    x->age = ++a->clock;
    a->allocated += size;
    reserve(&a->held, &a->capheld, a->nheld);
    a->held[a->nheld++] = i;
}

/* Merge free block i with its free neighbour j (j follows i); neither is
 * in a pool. */
static void merge(rep_alloc *a, int i, int j)
{
    a->b[i].size += a->b[j].size;
    a->b[i].next = a->b[j].next;
    if (a->b[j].next >= 0)
        a->b[a->b[j].next].prev = i;
    drop(a, j);
}

static void release(rep_alloc *a, int i)
{
    a->b[i].free = 1;
    a->b[i].used = 0;
    int nx = a->b[i].next, pv = a->b[i].prev;
    if (nx >= 0 && a->b[nx].free) {
        pool_remove(a, nx);
        merge(a, i, nx);
    }
    if (pv >= 0 && a->b[pv].free) {
        pool_remove(a, pv);
        merge(a, pv, i);
        i = pv;
    }
    pool_add(a, i);
}

void rep_alloc_release(rep_alloc *a, double bytes)
{
    if (!(bytes > 0))
        return;
    double size = ceil(bytes / MIN_BLOCK) * MIN_BLOCK;
    /* held blocks are in allocation order: the first exact match from the
     * youngest is the youngest exact one; without one, the first larger
     * block met is the youngest larger one */
    int exact = -1, larger = -1;
    for (int k = a->nheld - 1; k >= 0 && exact < 0; k--) {
        const rep_block *x = &a->b[a->held[k]];
        if (x->used == size)
            exact = k;
        else if (x->used > size && larger < 0)
            larger = k;
    }
    if (exact >= 0) {
        int i = a->held[exact];
        memmove(&a->held[exact], &a->held[exact + 1],
                (size_t)(a->nheld - exact - 1) * sizeof a->held[0]);
        a->nheld--;
        a->allocated -= size;
        release(a, i);
    } else if (larger >= 0) {
        a->allocated -= size;
        a->b[a->held[larger]].used -= size;
    }
}
