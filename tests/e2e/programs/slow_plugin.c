/* A plugin whose loading takes a while: its constructor runs (and the dynamic loader's lock is
 * held) for 300 ms, as when a large library is dlopen'ed. */
#include <time.h>

__attribute__((constructor)) static void slowStart(void) {
  struct timespec ts = {0, 300 * 1000 * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int slowPluginLoaded(void) { return 1; }
