/* LayerNorm rows, avx2: layernorm_impl.inc on simd-avx2.h vectors. */
#if defined(__x86_64__)
#include <math.h>
#include "../simd/simd-avx2.h"
#include "../simd/nofuse.h"
#include "layernorm.h"
#include "layernorm_impl.inc"
#endif
