#pragma once
// Where cutrace opens, reads and writes its files while the program runs: on one helper thread
// whose descriptor table is its own (unshare(CLONE_FILES), then emptied of the copies of the
// program's descriptors, so that no pipe or socket of the program is held open by it).
//
// Why: open() gives the lowest free descriptor, and programs rely on getting it (a daemon
// closes 0 and opens /dev/null as its stdin). Every file cutrace opens in the program's table
// takes that number for a moment: a thread's name (/proc/self/task/N/comm) when a new thread
// first records, an object's symbols when a stack first meets it, the stream when the program
// closed cutrace's descriptor. In a table of its own none of that is visible to the program,
// and the program's close_range() or closefrom() cannot close the stream.
//
// Jobs run one at a time, on the helper, while the calling thread waits: a job's descriptors
// must not outlive it unless only jobs use them (OwnFile's, the stream's). A job neither
// allocates nor frees: glibc gives a thread that does its own malloc arena, 64 MB of address
// space (RLIMIT_AS) for a few names; the caller prepares the memory. What a job writes with
// writeDiagnostic is written by the caller once the job is done (fd 2 is the program's).
//
// At exit (Collector::finish) the helper ends: the files written then are written by the exiting
// thread in the program's table, as the process ends (the stream opened again by path).
// Where the helper cannot run (unshare refused, as Docker's default seccomp profile does without
// CAP_SYS_ADMIN; no thread), jobs run on the calling thread, in the program's table, as before.
//
// Not for hooks or signal handlers: run() locks and waits.

#include <sys/types.h>

#include <cstddef>
#include <type_traits>

namespace cutrace::privateFiles {

// Runs job(arg) as described above.
void runJob(void (*job)(void*), void* arg);

// Runs `f` as a job. An exception it throws is thrown again here, on the calling thread.
template <class F>
void run(F&& f) {
  runJob([](void* p) { (*static_cast<std::remove_reference_t<F>*>(p))(); }, &f);
}

// Reads up to `size` bytes at `offset` of the file at `path` into `buf`, as a job: the bytes
// read, or -1 with errno set.
ssize_t readFile(const char* path, void* buf, std::size_t size, off_t offset = 0);

// 1 while the helper thread exists (it is one of the process's threads), else 0.
int helperThreads();

// Ends the helper thread and waits for it; later jobs run on the calling thread. For the
// process's last moments: its exit, or the drain thread about to be its last thread.
void stop();

// In a fork child: only the forking thread exists; the next job starts a helper of its own.
void forgetAfterFork();

}  // namespace cutrace::privateFiles
