/* LayerNorm rows, avx512f: layernorm_impl.inc on simd-avx512f.h vectors. */
#if defined(__x86_64__)
#include <math.h>
#include "../simd/simd-avx512f.h"
#include "../simd/nofuse.h"
#include "layernorm.h"
#include "layernorm_impl.inc"
#endif
