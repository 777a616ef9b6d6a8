/* GELU, avx2: vgelu_impl.inc on simd-avx2.h vectors. */
#if defined(__x86_64__)
#include <float.h>
#include "../simd/simd-avx2.h"
#include "gelu_math.h"
#include "vgelu.h"
#include "../simd/vexp.inc"
#include "vgelu_impl.inc"
#endif
