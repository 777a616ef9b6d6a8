/* The online-softmax step and K / V packing, neon: attention_impl.inc on simd-neon.h vectors. */
#if defined(__aarch64__)
#include <math.h>
#include "../simd/simd-neon.h"
#include "../simd/vexp.h"
#include "attention.h"
#include "../simd/vexp.inc"
#include "attention_impl.inc"
#endif
