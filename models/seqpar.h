/* seqpar: sequence parallelism over the TP group (the RFC's SP pass:
 * all_reduce -> reduce_scatter ... all_gather around the norms, residual on
 * the local token shard) and DeepSeek-style DSA context parallelism layered
 * on it (rfc-dsa-context-parallel.md).
 */
#ifndef CP_SEQPAR_H
#define CP_SEQPAR_H

#include "models/layers.h"

/* The scheme to build s with, or NULL when neither sequence parallelism
 * nor DSA CP applies (the plain tensor-parallel scheme is used). */
const layer_scheme *seqpar_scheme(const scenario *s);

#endif
