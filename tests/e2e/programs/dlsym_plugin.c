/* Loaded by dlsym_names.c with RTLD_LOCAL: it defines names that start as CUDA's do but are no
 * CUDA function, and looks names up with RTLD_NEXT from its own scope. */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((visibility("default"))) int curl_probe_value(void) { return 7; }
__attribute__((visibility("default"))) int cuPluginOnly(void) { return 11; }

static void show(const char* what, void* p) {
  const char* error = p == NULL ? dlerror() : NULL;
  printf("plugin %s: %s%s%s\n", what, p == NULL ? "not found" : "found", error != NULL ? ": " : "",
         error != NULL ? error : "");
}

__attribute__((visibility("default"))) void plugin_lookups(void) {
  show("RTLD_NEXT curl_probe_value", dlsym(RTLD_NEXT, "curl_probe_value"));
  show("RTLD_NEXT cuPluginMissing", dlsym(RTLD_NEXT, "cuPluginMissing"));
  show("RTLD_DEFAULT cuPluginOnly", dlsym(RTLD_DEFAULT, "cuPluginOnly"));
  show("RTLD_DEFAULT curl_probe_value", dlsym(RTLD_DEFAULT, "curl_probe_value"));
}
