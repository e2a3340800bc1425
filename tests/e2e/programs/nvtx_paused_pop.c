/* The drain pairs NVTX pops with pushes by level. A pop whose push is not in the trace must not
 * close an older range of the same level whose own pop is not in it either: here "kept" is
 * recorded, its pop falls in a paused stretch (CUTRACE_CAPTURE=signal, SIGUSR2 toggles), and so
 * does the push of "paused", whose pop is made while recording again. "kept" must end where the
 * drain learns its level was left (the push of "next"), flagged end_lost, not at that pop.
 * (Untraced, SIGUSR2 would end the process: the bare run sends none.) */
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static void toggle(int traced) {
  if (traced) raise(SIGUSR2);
}

int main(void) {
  const int traced = getenv("LD_PRELOAD") != NULL;
  toggle(traced); /* recording */
  nvtxRangePushA("kept");
  toggle(traced); /* paused */
  nvtxRangePop();
  nvtxRangePushA("paused");
  toggle(traced); /* recording */
  nvtxRangePop();
  nvtxMarkA("after");
  nvtxRangePushA("next");
  nvtxRangePop();
  printf("nvtx_paused_pop done\n");
  return 0;
}
