/* GELU, avx512f: vgelu_impl.inc on simd-avx512f.h vectors. */
#if defined(__x86_64__)
#include <float.h>
#include "../simd/simd-avx512f.h"
#include "gelu_math.h"
#include "vgelu.h"
#include "../simd/vexp.inc"
#include "vgelu_impl.inc"
#endif
