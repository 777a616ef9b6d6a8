/* What the plain library (libflexdelegate.so: the core without Python, for C/C++ hosts such as
 * benchmark_model --external_delegate_path) puts where the CFFI module has Python: no budget
 * planner. The plugin entry refuses a budget option up front (tflite/plugin.c); this callback
 * only answers a budget that got past it. */
#include <stdio.h>
#include "flex_api.h"

/* Overrides tflite/plugin.c's weak default (1: the planner is there). */
int fx_has_python_planner(void) { return 0; }

int flex_plan_callback(flex_graph_desc *desc, flex_plan *plan) {
  (void)desc;
  snprintf(plan->error.message, sizeof plan->error.message, "%s", FLEX_PLAIN_NO_BUDGET);
  return -2;
}
