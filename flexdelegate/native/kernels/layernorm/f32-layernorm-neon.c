/* LayerNorm rows, neon: layernorm_impl.inc on simd-neon.h vectors. */
#if defined(__aarch64__)
#include <math.h>
#include "../simd/simd-neon.h"
#include "../simd/nofuse.h"
#include "layernorm.h"
#include "layernorm_impl.inc"
#endif
