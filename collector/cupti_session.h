#pragma once
// The device timeline through CUPTI's activity API, loaded at run time with dlopen (never a link
// dependency: the preload must load where there is no CUPTI and no GPU).
//
// Choices, and why:
// - Activity API only, no cuptiSubscribe: CUPTI allows one subscriber, and a program that runs
//   torch.profiler needs it. A probe subscribe/unsubscribe at start-up tells whether another
//   tool (nsys, ncu) already holds CUPTI; then cutrace stays host-only and says so.
// - Host launches are linked to kernels by correlation id, through driver API activity records
//   enabled only for the launch, copy and set functions (cuptiActivityEnableDriverApi), not for
//   every call; the exporter matches each record to the host event on the same thread that
//   overlaps it. Measured on an H100: kernels launched through the runtime carry the driver
//   call's correlation id too (100 % linked), and runtime records only added cost.
// - CUPTI must start before the driver initialises (the preload starts it at the program's
//   first CUDA call, before that call runs, whatever the capture mode): API records of a
//   context that existed before CUPTI was enabled did not link in measurements (H100, 2026-11-27:
//   0 of 8,910 device records linked when a capture mode started CUPTI at its first recorded call).
// - CUPTI timestamps are mapped to CLOCK_MONOTONIC by an offset sampled at start rather than a
//   timestamp callback (cheaper per record).
// - If the program sets up a CUPTI profiler of its own (torch.profiler), cutrace hands CUPTI
//   over at the program's first set-up call (programUsesCupti): the program's profiler works
//   exactly as without cutrace, and cutrace's device timeline ends there (metadata says so).
//
// Concurrency: start() is idempotent and runs once (first CUDA call). Buffer callbacks
// run on CUPTI's threads; they append to the collector's device store under its mutex.

#include <cstddef>
#include <cstdint>

#include "collector/trace_data.h"

namespace cutrace {

enum class CuptiMode : uint8_t { Auto, On, Off };

struct CuptiApiFilter {
  const uint32_t* driverCbids;  // CUPTI_DRIVER_TRACE_CBID_* of the launch/copy/set hooks
  std::size_t driverCount;
};

class Cupti {
 public:
  // Loads and enables CUPTI unless configured off or unavailable; never fails the program.
  static void start(CuptiMode mode, const CuptiApiFilter& filter);
  static bool started();
  // Delivers every pending buffer now (before a context is destroyed, at exit).
  static void flush();
  // fork(): the collector's prepare handler takes CUPTI's lock (after its own), the parent's
  // handler releases it; in the child, forgetAfterFork releases it: CUPTI's threads did not
  // survive the fork and the parent's records are the parent's, so the child forgets both (the
  // child's trace is host-only).
  static void lockForFork();
  static void unlockAfterFork();
  static void forgetAfterFork();
  // Moves what the buffers delivered into `data` (device events, API records, state).
  static void collect(TraceData& data, const class NameTable& names);

  // The program's own CUPTI calls, as interposed by the preload. When the program starts a
  // profiler of its own (torch.profiler) while cutrace's session is on, cutrace hands CUPTI
  // over at the program's first call that sets CUPTI up (subscribe, enable a kind, register
  // buffers): flushes and disables what it recorded, finalizes CUPTI, and the program's call
  // then attaches it afresh, so nothing the program set up is undone; cutrace stays host-only
  // from then on. Handed over later, at the program's buffer registration, torch.profiler's
  // first session got no kernel at all (PyTorch 2.11, H100): its subscribe came first, and
  // CUPTI documents refusing a subscriber while another client's profiling session is on. If
  // the program set CUPTI up first, cutrace never starts its session (host-only). Called before
  // the program's call reaches CUPTI, which it always does.
  static void programUsesCupti();
  static void programDisabled(int kind);
  // True when cutrace's session is on: the preload then skips the real cuptiFinalize.
  static bool programFinalizing();
};

}  // namespace cutrace
