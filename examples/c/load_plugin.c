/* Loads flexdelegate's plain shared library (libflexdelegate.so: no Python inside) the way a
 * C/C++ TFLite tool does with --external_delegate_path (benchmark_model, label_image, the
 * external delegate adaptor): dlopen, then the two plugin entry points with string options.
 *
 *   cc -o load_plugin load_plugin.c -ldl
 *   ./load_plugin "$(python -c 'import flexdelegate; print(flexdelegate.library_path(plain=True))')" \
 *       cache_path=m.fxc num_threads=2
 *
 * The TfLiteDelegate* it returns is what the tool hands to Interpreter::ModifyGraphWithDelegate
 * (C++) or TfLiteInterpreterOptionsAddDelegate (C API). Exit 0 created, 1 refused or not a
 * plugin, 2 usage. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef void *(*create_fn)(char **keys, char **values, size_t n, void (*report_error)(const char *));
typedef void (*destroy_fn)(void *delegate);

static void report(const char *msg) { fprintf(stderr, "refused: %s\n", msg); }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBRARY [key=value ...]\n", argv[0]);
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  create_fn create = (create_fn)dlsym(lib, "tflite_plugin_create_delegate");
  destroy_fn destroy = (destroy_fn)dlsym(lib, "tflite_plugin_destroy_delegate");
  if (!create || !destroy) {
    fprintf(stderr, "not a TFLite external delegate: %s\n", dlerror());
    return 1;
  }
  char *keys[16], *values[16];
  size_t n = 0;
  for (int i = 2; i < argc && n < 16; i++) { /* key=value, as the tools split key:value;... */
    char *eq = strchr(argv[i], '=');
    if (!eq) continue;
    *eq = 0;
    keys[n] = argv[i];
    values[n++] = eq + 1;
  }
  void *delegate = create(keys, values, n, report);
  if (!delegate) { /* a bad option, or a budget (the plain library has no planner): one line said why */
    dlclose(lib);
    return 1;
  }
  printf("created a flexdelegate TfLiteDelegate at %p with %zu option(s)\n", delegate, n);
  destroy(delegate);
  dlclose(lib);
  return 0;
}
