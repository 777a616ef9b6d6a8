/* The online-softmax step and K / V packing, avx2: attention_impl.inc on simd-avx2.h vectors. */
#if defined(__x86_64__)
#include <math.h>
#include "../simd/simd-avx2.h"
#include "../simd/vexp.h"
#include "attention.h"
#include "../simd/vexp.inc"
#include "attention_impl.inc"
#endif
