/* dlsym of names that start as CUDA's do ("cu", "__cu") but are no CUDA function (libcurl's
 * curl_*, a plugin's own cu* names) must answer exactly as glibc answers without cutrace: the
 * same pointer or NULL, the same dlerror() text, from the main program and from a plugin loaded
 * with RTLD_LOCAL (whose names are not in the global scope). run_e2e compares the output bare
 * and traced. One CUDA call makes the trace. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

static void show(const char* what, void* p) {
  const char* error = p == NULL ? dlerror() : NULL;
  printf("main %s: %s%s%s\n", what, p == NULL ? "not found" : "found", error != NULL ? ": " : "",
         error != NULL ? error : "");
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  show("RTLD_NEXT curl_probe_value (no plugin yet)", dlsym(RTLD_NEXT, "curl_probe_value"));
  show("RTLD_NEXT __cudaNoSuchThing", dlsym(RTLD_NEXT, "__cudaNoSuchThing"));
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  /* The plugin is loaded after the program, but RTLD_LOCAL: no RTLD_NEXT or RTLD_DEFAULT from
   * here sees its names. */
  show("RTLD_NEXT curl_probe_value", dlsym(RTLD_NEXT, "curl_probe_value"));
  show("RTLD_NEXT cuPluginOnly", dlsym(RTLD_NEXT, "cuPluginOnly"));
  show("RTLD_DEFAULT cuPluginOnly", dlsym(RTLD_DEFAULT, "cuPluginOnly"));
  show("handle cuPluginOnly", dlsym(plugin, "cuPluginOnly"));
  void (*lookups)(void) = (void (*)(void))dlsym(plugin, "plugin_lookups");
  if (lookups == NULL) return 1;
  lookups();
  dlclose(plugin);
  return 0;
}
