/* The constants every sigmoid variant shares (vsigmoid.h): the clamp, the two-part ln2 and
 * the coefficients Q0..Q3 of q. Private to the f32-vsigmoid-*.c files. */
#ifndef FLEX_VSIGMOID_POLY_H
#define FLEX_VSIGMOID_POLY_H
#define EXP_LO (-87.3f)
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO (-2.12194440e-4f)
#define Q3 8.332597091794014e-3f
#define Q2 4.189864546060562e-2f
#define Q1 1.6666901111602783e-1f
#define Q0 4.9999141693115234e-1f
#endif
