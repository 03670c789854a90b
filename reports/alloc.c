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
    memset(a, 0, sizeof *a);
}

static int seg_small(const rep_alloc *a, int seg)
{
    return a->seg_small[seg];
}

/* The best free block of the pool for `size` bytes, -1 none. */
static int best_fit(const rep_alloc *a, double size, int small)
{
    int best = -1;
    for (int i = 0; i < a->n; i++) {
        const rep_block *x = &a->b[i];
        if (x->size < 0 || !x->free || x->size < size || seg_small(a, x->seg) != small)
            continue;
        if (best < 0 || x->size < a->b[best].size ||
            (x->size == a->b[best].size &&
             (x->seg < a->b[best].seg || (x->seg == a->b[best].seg && x->off < a->b[best].off))))
            best = i;
    }
    return best;
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
    double rest = a->b[i].size - size;
    if (small ? rest >= MIN_BLOCK : rest > SMALL_SIZE) {
        int j = grow(a);
        rep_block *x = &a->b[i]; /* grow may move the array */
        a->b[j] = (rep_block){x->seg, x->off + size, rest, 0, 1, i, x->next, 0};
        if (x->next >= 0)
            a->b[x->next].prev = j;
        x->next = j;
        x->size = size;
    }
    rep_block *x = &a->b[i];
    x->free = 0;
    x->used = size;
    x->age = ++a->clock;
    a->allocated += size;
}

/* Merge free block i with its free neighbour j (j follows i). */
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
    if (nx >= 0 && a->b[nx].free)
        merge(a, i, nx);
    if (pv >= 0 && a->b[pv].free)
        merge(a, pv, i);
}

void rep_alloc_release(rep_alloc *a, double bytes)
{
    if (!(bytes > 0))
        return;
    double size = ceil(bytes / MIN_BLOCK) * MIN_BLOCK;
    int exact = -1, larger = -1;
    for (int i = 0; i < a->n; i++) {
        const rep_block *x = &a->b[i];
        if (x->size < 0 || x->free)
            continue;
        if (x->used == size && (exact < 0 || x->age > a->b[exact].age))
            exact = i;
        if (x->used > size && (larger < 0 || x->age > a->b[larger].age))
            larger = i;
    }
    if (exact >= 0) {
        a->allocated -= size;
        release(a, exact);
    } else if (larger >= 0) {
        a->allocated -= size;
        a->b[larger].used -= size;
    }
}
