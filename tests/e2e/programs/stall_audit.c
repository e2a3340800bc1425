/* An audit module (LD_AUDIT) that holds the dynamic loader in the middle of adding an object:
 * when the object named by the plugin is mapped, it writes a byte to fd 100 and sleeps 500 ms
 * (glibc's loader state is "adding" meanwhile), so that another thread can fork right then. */
#include <link.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

unsigned la_version(unsigned version) { return version; }

unsigned la_objopen(struct link_map* map, Lmid_t lmid, uintptr_t* cookie) {
  (void)lmid;
  (void)cookie;
  if (map->l_name != NULL && strstr(map->l_name, "slow_plugin") != NULL) {
    if (write(100, "x", 1) == 1) {
      struct timespec ts = {0, 500 * 1000 * 1000};
      while (nanosleep(&ts, &ts) != 0) {
      }
    }
  }
  return 0;
}
