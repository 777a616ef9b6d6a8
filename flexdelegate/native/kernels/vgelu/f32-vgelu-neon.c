/* GELU, neon: vgelu_impl.inc on simd-neon.h vectors. */
#if defined(__aarch64__)
#include <float.h>
#include "../simd/simd-neon.h"
#include "gelu_math.h"
#include "vgelu.h"
#include "../simd/vexp.inc"
#include "vgelu_impl.inc"
#endif
