// trace_check: validates a trace written by libtrace.so and prints a canonical, timing-free
// summary of it for end-to-end tests to compare with an expected file.
//
//   trace_check TRACE.json [--folded FILE] [--thread-ids FILE] [--allow-drops] [--dropped N]
//               [--view launches|shape] [--expect-linked] [--stacks] [--python-frames FILE] [--named MODULE]
//               [--expect-dwarf] [--max-fallbacks N] [--max-dropped-percent P] [--flamegraph flamegraph.pl]
//               [--max-bytes-per-event B]
//               [--issued FILE] [--names A,B,...] [--instant NAME]... [--children PARENT=A|B|...]...
//               [--count NAME=N]... [--stacked NAME]... [--uncounted-gaps] [--group-threads]
//               [--counter-values] [--handle-pair MADE|...=ENDED|...]... [--streams] [--handles]
//   trace_check --compare A.trace.json B.trace.json
//
// --compare: A is a process's own trace, B the one `cutrace export` rebuilt from its stream;
// they must hold the same traceEvents (as a multiset, ts and dur exactly equal: events are
// converted to nanoseconds once, in the store, and both files read those), the same metadata
// object, and their folded files (same stems) the same stacks and weights.
//
// Checks (any failure prints "FAIL: ..." on stderr and exits 1):
// - the file parses as JSON (simdjson) with traceEvents and metadata;
// - every event has ph, pid (= metadata.pid) and tid; X events have cat, ts, dur >= 0 and
//   args.seq; every tid has a thread_name and the process a process_name;
// - per track, X events nest properly and seq grows strictly in timeline order; NVTX ranges
//   and marks of a named domain are on their thread's track for that domain (tid 2^31 +
//   ordinal * 2^22 + the thread's tid, named "<thread> nvtx domain <domain>"), all others on
//   their thread's;
// - one launch, one kernel: no event carrying args.kernel lies inside another that does, and
//   every launch API that is not nested in another launch carries one;
// - metadata.dropped_events is 0 (--dropped N: exactly N, a program that loses events on
//   purpose) unless --allow-drops (then the summary is only what does not depend on timing); on
//   every thread the gaps in args.seq equal metadata.threads[].dropped;
// - metadata.rank, when present, is in the file name as -rank<R>;
// - the folded files have sorted, distinct "frame;...;frame N" lines with integer weights
//   and follow the viewers' rules (folded_rules.h: no weight 0, no stack ending in a number,
//   something to draw); every stack of .folded is in .calls.folded, whose calls add up to the
//   X events of the thread tracks; metadata.folded gives the depth cap;
// - --flamegraph PATH: each folded file rendered by flamegraph.pl (perl PATH FILE) exits 0,
//   reads every line as written (no differential frames, its total is the file's) and draws
//   every frame wide enough to draw under its own name;
// - --max-bytes-per-event B: the trace file holds at most B bytes per traceEvents entry;
// - --thread-ids: each "name tid" line names a thread that is in the trace with that tid;
// - device tracks (CUPTI): kernel/memcpy/memset X events; every flow id is one "s" and one "f"
//   (a graph launch's kernels, one correlation id, each have a flow of their own); with
//   --expect-linked every kernel has a flow and launches == kernels;
// - --expect-dwarf: the stacks came from the .eh_frame walk, none left to its fallback (and,
//   under CUTRACE_UNWIND=verify, none different from libunwind's);
// - --max-dropped-percent P (implies --allow-drops): at most P% of the events were dropped.
// - --issued FILE: the host events (those with args.seq) plus metadata.dropped_events equal the
//   number in FILE, which the program wrote: every event it issued was recorded or counted.
// - --names: every host event has one of these names; --instant NAME: events so named are
//   instants ("i"); --children PARENT=A|B: events named PARENT have only children so named
//   (unless their end was lost); --count NAME=N: exactly N host events are named NAME.
// - --stacked NAME: every event so named has its call stack.
// - --handle-pair A|B=C|D: the events named A or B that succeeded (no args.result) carry, as
//   args.handle, the same handles as those named C or D (a multiset: each module loaded is
//   unloaded once, under its handle).
// - --uncounted-gaps: a thread's gaps in seq may outnumber its dropped events (not the reverse):
//   an event a handler's siglongjmp cut short between two stores of cutrace's count is lost
//   uncounted.
// --group-threads: threads with the same name and events are summarised once, with their count.
// --streams, --handles: the summary shows each host event's args.stream as "stream=sN", its
// args.handle as "handle=hN", N the stream's (handle's) order of first appearance in the file
// (their values differ from run to run).
// --counter-values: the summary lists each counter's values in time order ("counter NAME: A B ...").
// --view launches renders only NVTX ranges and launches ("launch kernel=..."), which is the
// same whether a launch went through the shared runtime, a static one or the driver.
// --view shape renders, for traces too deep to list, per thread the X events and the deepest
// nesting, and of the folded files the lines, the most frames in a line and the calls.
// The summary lists per thread (threads ordered by name, then content) the event tree with
// names and the deterministic args (kernel, grid, block, bytes, kind, result); --stacks adds
// each event's args.stack. Stacks (there and in the folded list) leave out frames that differ
// between machines: libc start-up and thread entry, and frames named only module+0xoffset;
// --python-frames FILE keeps, of the call-stack frames, only the Python frames of that script.
// --named MODULE fails any folded stack with a frame of MODULE named only by its offset.
// --max-fallbacks N fails a trace whose metadata.stacks.unwind_fallbacks is above N.

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "folded_rules.h"

namespace {

// Synthetic track ids (exporters/trace_view.h): GPU streams in [2^30, 2^31), NVTX domain
// tracks from 2^31 with the thread's tid in the low 22 bits.
constexpr int64_t kGpuTrackBase = int64_t{1} << 30;
constexpr int64_t kDomainTrackBase = int64_t{1} << 31;
bool isGpuTrack(int64_t tid) { return tid >= kGpuTrackBase && tid < kDomainTrackBase; }
bool isDomainTrack(int64_t tid) { return tid >= kDomainTrackBase; }
int64_t ownerThread(int64_t tid) { return isDomainTrack(tid) ? tid & ((int64_t{1} << 22) - 1) : tid; }

struct Ev {
  std::string ph, cat, name;
  int64_t ts = 0, dur = 0;  // ns
  int64_t seq = -1;
  std::string args;         // canonical deterministic args
  std::string stack;        // args.stack, machine-specific frames left out (--stacks)
  std::string domain;       // args.domain
  bool hasKernel = false;
  std::vector<std::size_t> children;
};

struct Thread {
  int64_t tid = 0;
  std::string name;
  std::vector<Ev> events;
  std::string rendered;
  std::size_t deepest = 0;  // most X events open at once
};

[[noreturn]] void fail(const std::string& why) {
  std::cerr << "FAIL: " << why << "\n";
  std::exit(1);
}

int64_t toNs(double micros) { return std::llround(micros * 1000.0); }

std::string str(simdjson::simdjson_result<simdjson::dom::element> v) {
  std::string_view s;
  if (v.get(s) != simdjson::SUCCESS) return {};
  return std::string(s);
}

std::string str(simdjson::dom::element v) {
  std::string_view s;
  if (v.get(s) != simdjson::SUCCESS) return {};
  return std::string(s);
}

// Names as they appear in summaries: control bytes as \xNN, long names cut with their length,
// so expected files stay readable and exact.
std::string printable(const std::string& name) {
  std::string out;
  const std::size_t shown = name.size() > 100 ? 40 : name.size();
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown < name.size()) out += "...(" + std::to_string(name.size()) + " bytes)";
  return out;
}

// Kernel launches (cudaLaunchKernel, cuLaunchKernelEx, ...), not graph launches nor host
// functions queued on a stream (cudaLaunchHostFunc).
bool isLaunchName(const std::string& n) {
  return n.find("Launch") != std::string::npos && n.find("GraphLaunch") == std::string::npos &&
         n.find("LaunchHostFunc") == std::string::npos;
}

// Frames that differ between machines and C libraries: program start-up and thread entry in
// libc and in the sanitizer runtimes (which start threads through their own function), and any
// frame the symbolizer could only name as module+0xoffset.
bool machineSpecificFrame(const std::string& f) {
  static const std::set<std::string> kStartup{"_start", "__libc_start_main", "__libc_start_call_main", "start_thread",
                                              "clone", "clone3", "__clone", "__clone3", "__GI___clone3", "[unknown]",
                                              "__tsan_thread_start_func", "asan_thread_start"};
  if (kStartup.count(f)) return true;
  const std::size_t plus = f.rfind("+0x");
  return plus != std::string::npos && plus > 0 && f.find_first_not_of("0123456789abcdef", plus + 3) == std::string::npos;
}

bool listStacks = false;
bool counterValues = false;
bool showStreams = false, showHandles = false;
// --streams, --handles: value -> N of "sN" ("hN").
std::map<std::string, std::size_t> streamLabels, handleLabels;
std::size_t labelOf(std::map<std::string, std::size_t>& labels, const std::string& value) {
  return labels.try_emplace(value, labels.size()).first->second;
}
// Every frame name some args.stack holds: without --stacks the folded listing leaves them out,
// so summaries of tests about something else do not depend on the unwinder or the compiler.
std::set<std::string> stackFrameNames;
std::string pythonFile;  // --python-frames FILE: stacks keep only Python frames of FILE
std::string namedModule;  // --named MODULE: no folded frame may be MODULE+0xoffset

// "function (path:line)" -> "function (file:line)" when path's file name is pythonFile.
bool keepPythonFrame(const std::string& frame, std::string& shown) {
  if (frame.empty() || frame.back() != ')') return false;
  const std::size_t open = frame.rfind(" (");
  const std::size_t colon = frame.rfind(':');
  if (open == std::string::npos || colon == std::string::npos || colon < open) return false;
  std::string path = frame.substr(open + 2, colon - open - 2);
  const std::size_t slash = path.rfind('/');
  if (slash != std::string::npos) path = path.substr(slash + 1);
  if (path != pythonFile) return false;
  shown = frame.substr(0, open) + " (" + path + frame.substr(colon, std::string::npos);
  return true;
}

// A frame as summaries show it, or false when it is left out.
bool shownFrame(const std::string& frame, std::string& shown) {
  if (!pythonFile.empty()) return keepPythonFrame(frame, shown);
  if (machineSpecificFrame(frame)) return false;
  shown = frame;
  return true;
}

std::string renderStack(simdjson::dom::object args) {
  simdjson::dom::array frames;
  if (args["stack"].get(frames) != simdjson::SUCCESS) return {};
  std::string out;
  for (simdjson::dom::element f : frames) {
    std::string_view name;
    if (f.get(name)) fail("args.stack holds a non-string");
    if (name.empty()) fail("empty frame in args.stack");
    stackFrameNames.insert(std::string(name));
    std::string shown;
    if (!shownFrame(std::string(name), shown)) continue;
    out += (out.empty() ? "" : "<") + printable(shown);
  }
  return out;
}

std::string renderArgs(simdjson::dom::object args, bool& hasKernel) {
  std::ostringstream out;
  simdjson::dom::element v;
  if (args["kernel"].get(v) == simdjson::SUCCESS) {
    hasKernel = true;
    out << " kernel=" << printable(str(v));
  }
  for (const char* key : {"grid", "block"}) {
    simdjson::dom::array a;
    if (args[key].get(a) == simdjson::SUCCESS) {
      out << " " << key << "=";
      bool first = true;
      for (simdjson::dom::element x : a) {
        out << (first ? "" : ",") << int64_t(x);
        first = false;
      }
    }
  }
  for (const char* key : {"shared", "bytes", "result"}) {
    int64_t n;
    if (args[key].get(n) == simdjson::SUCCESS) out << " " << key << "=" << n;
  }
  if (args["kind"].get(v) == simdjson::SUCCESS) out << " kind=" << str(v);
  if (showHandles && args["handle"].get(v) == simdjson::SUCCESS) out << " handle=h" << labelOf(handleLabels, str(v));
  if (showStreams && args["stream"].get(v) == simdjson::SUCCESS) out << " stream=s" << labelOf(streamLabels, str(v));
  for (const char* key : {"op_seq", "stashed_seq", "op_id"}) {
    uint64_t n;
    if (args[key].get(n) == simdjson::SUCCESS) out << " " << key << "=" << n;
  }
  for (const char* key : {"sizes", "input_op_ids"})
    if (args[key].get(v) == simdjson::SUCCESS) out << " " << key << "=" << simdjson::to_string(v);
  if (args["backward"].get(v) == simdjson::SUCCESS) out << " backward";
  if (args["domain"].get(v) == simdjson::SUCCESS) out << " domain=" << str(v);
  if (args["category"].get(v) == simdjson::SUCCESS) {
    if (v.is_string()) out << " category=" << str(v);
    else out << " category=" << int64_t(v);
  }
  for (const char* flag : {"unclosed", "end_lost", "truncated", "captured"})
    if (args[flag].get(v) == simdjson::SUCCESS) out << " " << flag;
  return out.str();
}

bool launchesView = false;
std::set<std::string> allowedNames;                        // --names
std::set<std::string> instantNames;                        // --instant
std::map<std::string, std::set<std::string>> childRules;   // --children
std::map<std::string, uint64_t> expectedCounts;             // --count
std::set<std::string> stackedNames;                         // --stacked
// --handle-pair: the names that make handles and those that end them, and the handles seen.
struct HandlePair {
  std::set<std::string> makers, enders;
  std::multiset<std::string> made, ended;
};
std::vector<HandlePair> handlePairs;

// "NAME=VALUE" of a rule argument (--children, --count), or one message and exit.
std::pair<std::string, std::string> splitRule(const std::string& rule, const char* usage) {
  const std::size_t eq = rule.find('=');
  if (eq == std::string::npos) fail(usage);
  return {rule.substr(0, eq), rule.substr(eq + 1)};
}

std::set<std::string> splitList(const std::string& list, char sep) {
  std::set<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = list.find(sep, from);
    out.insert(list.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

void render(const Thread& t, const Ev& e, int depth, std::string& out) {
  if (launchesView && e.cat != "nvtx") {
    if (!e.hasKernel) return;  // nested driver calls and every other API are left out
    out += std::string(static_cast<std::size_t>(depth) * 2 + 2, ' ');
    out += "launch" + e.args.substr(0, e.args.find(" result=")) + "\n";
    return;
  }
  out += std::string(static_cast<std::size_t>(depth) * 2 + 2, ' ');
  out += e.ph + " " + e.cat + " " + printable(e.name) + e.args;
  if (listStacks && !e.stack.empty()) out += " stack=" + e.stack;
  out += "\n";
  for (std::size_t c : e.children) render(t, t.events[c], depth + 1, out);
}

// Reads a folded file, checking the format; returns stack -> weight.
std::map<std::string, uint64_t> readFolded(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open folded file " + path);
  std::string line, previous;
  std::map<std::string, uint64_t> stacks;
  while (std::getline(in, line)) {
    const std::size_t space = line.rfind(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size())
      fail("folded line without ' weight': " + line);
    const std::string stack = line.substr(0, space);
    const std::string weight = line.substr(space + 1);
    if (weight.find_first_not_of("0123456789") != std::string::npos) fail("folded weight not an integer: " + line);
    if (stack.find("\n") != std::string::npos) fail("newline inside a stack");
    std::size_t start = 0;
    for (;;) {
      const std::size_t semi = stack.find(';', start);
      const std::string frame = stack.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
      if (frame.empty()) fail("empty frame in folded line: " + line);
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    if (!previous.empty() && !(previous < stack)) fail("folded lines not sorted/distinct at: " + line);
    previous = stack;
    stacks[stack] = std::stoull(weight);
  }
  return stacks;
}

// "function (file.py:line)", as cutrace names a Python frame.
bool isPythonFrame(const std::string& frame) {
  return frame.size() > 1 && frame.back() == ')' && frame.find(".py:") != std::string::npos;
}

std::string withoutMachineFrames(const std::string& stack) {
  std::string kept;
  std::size_t from = 0;
  for (;;) {
    const std::size_t semi = stack.find(';', from);
    const std::string frame = stack.substr(from, semi == std::string::npos ? std::string::npos : semi - from);
    std::string shown;
    if (!listStacks && (stackFrameNames.count(frame) || machineSpecificFrame(frame))) {
      if (semi == std::string::npos) break;
      from = semi + 1;
      continue;
    }
    // API and NVTX frames stay when only Python frames of the script are kept.
    const bool python = isPythonFrame(frame);
    // With --python-frames, CUDA API frames stay and the interpreter's native frames go.
    const bool api = frame.rfind("cu", 0) == 0 && frame.size() > 2 && (std::isupper(static_cast<unsigned char>(frame[2])) || frame.rfind("cuda", 0) == 0);
    if (!pythonFile.empty() && !python) shown = api ? frame : "";
    else shownFrame(frame, shown);
    if (!shown.empty()) kept += (kept.empty() ? "" : ";") + shown;
    if (semi == std::string::npos) break;
    from = semi + 1;
  }
  return kept;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void checkRules(const std::string& path) {
  const cutrace::test::FoldedRules r = cutrace::test::checkFoldedRules(slurp(path));
  if (!r.problems.empty()) fail(path + ": " + r.problems.front());
}

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string htmlUnescape(std::string s) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""},
                                 {"&amp;", "&"}}) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  }
  return s;
}

// Renders `path` with flamegraph.pl and checks it read every line as written: exit 0, nothing
// ignored, no differential frame, the total of the file, and a box under its own name for every
// frame wide enough to draw (a zero-weight line can erase one).
void checkWithFlamegraphPl(const std::string& script, const std::string& path) {
  const auto stacks = readFolded(path);
  if (stacks.empty()) return;  // nothing to draw: flamegraph.pl says so and exits 2
  char errPath[] = "/tmp/trace_check-fg-XXXXXX";
  const int fd = mkstemp(errPath);
  if (fd < 0) fail("mkstemp failed");
  close(fd);
  const std::string command = "perl " + shellQuote(script) + " " + shellQuote(path) + " 2>" + shellQuote(errPath);
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) fail("cannot run " + command);
  std::string svg;
  char buf[65536];
  for (std::size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) svg.append(buf, n);
  const int status = pclose(p);
  const std::string err = slurp(errPath);
  unlink(errPath);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("flamegraph.pl failed on " + path + ": " + err);
  if (err.find("Ignored") != std::string::npos) fail("flamegraph.pl on " + path + ": " + err);

  uint64_t total = 0;
  std::map<std::string, uint64_t> nodes;  // path prefix -> weight
  std::set<std::string> frames;
  for (const auto& [stack, w] : stacks) {
    total += w;
    for (std::size_t semi = 0;; ++semi) {
      semi = stack.find(';', semi);
      const std::string prefix = stack.substr(0, semi);
      nodes[prefix] += w;
      frames.insert(prefix.substr(prefix.rfind(';') == std::string::npos ? 0 : prefix.rfind(';') + 1));
      if (semi == std::string::npos) break;
    }
  }
  std::set<std::string> shown;
  bool sawAll = false;
  static const std::regex kTitle(R"((.*) \(([\d,]+) samples, [\d.]+%(; [+-]?[\d.]+%)?\))");
  for (std::size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 7)) {
    const std::size_t close = svg.find("</title>", at);
    if (close == std::string::npos) break;
    const std::string title = htmlUnescape(svg.substr(at + 7, close - at - 7));
    std::smatch m;
    if (!std::regex_match(title, m, kTitle)) continue;
    if (m[3].matched) fail("flamegraph.pl read a differential line in " + path + ": " + title);
    std::string count = m[2].str();
    count.erase(std::remove(count.begin(), count.end(), ','), count.end());
    if (m[1].str() == "all" && !sawAll) {
      sawAll = true;
      if (std::stoull(count) != total)
        fail("flamegraph.pl's total for " + path + " is " + count + ", the file's " + std::to_string(total));
      continue;
    }
    shown.insert(m[1].str());
  }
  if (!sawAll) fail("flamegraph.pl drew no 'all' frame for " + path);
  for (const std::string& f : shown)
    if (!frames.count(f)) fail("flamegraph.pl drew a frame that is not in " + path + ": " + f);
  for (const auto& [prefix, w] : nodes) {
    // flamegraph.pl leaves out boxes narrower than 0.1 px of its 1180 px: keep a margin.
    if (static_cast<double>(w) * 1180.0 / static_cast<double>(total) < 0.15) continue;
    const std::string leaf = prefix.substr(prefix.rfind(';') == std::string::npos ? 0 : prefix.rfind(';') + 1);
    if (!shown.count(leaf)) fail("flamegraph.pl drew no box for " + leaf + " in " + path);
  }
}

// The stacks of the time file are those of the calls file (same stem, .calls.folded) that took
// any time; the calls file lists every stack where a call or range ended. With --stacks the
// stacks are listed (machine-specific frames left out); otherwise, so that the summary does
// not depend on the unwinder or on what the compiler inlined, only the leaf frames with their
// calls, and the calls must add up to the X events of the thread tracks.
void checkFolded(const std::string& path, std::ostream& summary, bool list, bool shape, std::size_t hostEvents,
                 const std::string& flamegraph) {
  const auto host = readFolded(path);
  std::map<std::string, uint64_t> calls;
  const std::string stem = path.substr(0, path.size() - std::string(".folded").size());
  std::vector<std::string> files{path};
  if (std::ifstream(stem + ".calls.folded")) {
    files.push_back(stem + ".calls.folded");
    calls = readFolded(stem + ".calls.folded");
    for (const auto& [stack, w] : host)
      if (!calls.count(stack)) fail(".folded stack missing from calls.folded: " + stack);
    uint64_t total = 0;
    for (const auto& [stack, n] : calls) total += n;
    if (total != hostEvents)
      fail("calls.folded counts " + std::to_string(total) + " calls, the trace has " + std::to_string(hostEvents));
  }
  if (std::ifstream(stem + ".gpu.folded")) {
    files.push_back(stem + ".gpu.folded");
    for (const auto& [stack, w] : readFolded(stem + ".gpu.folded"))
      if (!calls.empty() && !calls.count(stack)) fail("gpu.folded stack missing from calls.folded: " + stack);
  }
  for (const std::string& f : files) {
    checkRules(f);
    if (!flamegraph.empty()) checkWithFlamegraphPl(flamegraph, f);
  }
  const auto& all = calls.empty() ? host : calls;
  // Python frames go under the native frame of the eval loop that ran them, never at the root
  // (where they went when no native frame was known as the eval loop: a stripped PGO build).
  if (!pythonFile.empty())
    for (const auto& [stack, w] : all)
      if (isPythonFrame(stack.substr(0, stack.find(';')))) fail("a Python frame at the root of a stack: " + stack);
  if (!namedModule.empty())
    for (const auto& [stack, w] : all)
      if ((";" + stack).find(";" + namedModule + "+0x") != std::string::npos)
        fail("a frame of " + namedModule + " without a name: " + stack);
  if (shape) {
    std::size_t maxFrames = 0;
    uint64_t total = 0;
    for (const auto& [stack, n] : all) {
      maxFrames = std::max<std::size_t>(maxFrames, 1 + std::count(stack.begin(), stack.end(), ';'));
      total += n;
    }
    summary << "folded lines " << all.size() << " max frames " << maxFrames;
    if (!calls.empty()) summary << " calls " << total;
    summary << "\n";
    return;
  }
  std::map<std::string, uint64_t> shown;
  for (const auto& [stack, w] : all) {
    const std::size_t semi = stack.rfind(';');
    const std::string key = listStacks ? withoutMachineFrames(stack) : stack.substr(semi == std::string::npos ? 0 : semi + 1);
    shown[key] += calls.count(stack) ? calls[stack] : 0;
  }
  if (!list) return;  // the launches view leaves out what depends on the runtime in use
  summary << (listStacks ? "folded " : "folded leaves ") << shown.size() << "\n";
  for (const auto& [s, n] : shown) summary << "  " << printable(s) << (calls.empty() ? "" : " calls=" + std::to_string(n)) << "\n";
}

// ---- trace_check --compare A.trace.json B.trace.json

// An event without its times, as one canonical string (the same writer writes both files, so
// its keys come in the same order), and its times in ns.
struct Untimed {
  std::string key;
  int64_t ts = 0, dur = 0;
  bool operator<(const Untimed& o) const { return key != o.key ? key < o.key : ts < o.ts; }
};

std::vector<Untimed> untimedEvents(simdjson::dom::array events) {
  std::vector<Untimed> out;
  for (simdjson::dom::object e : events) {
    Untimed u;
    for (auto [key, value] : e) {
      double micros;
      if ((key == "ts" || key == "dur") && value.get(micros) == simdjson::SUCCESS) {
        (key == "ts" ? u.ts : u.dur) = toNs(micros);
        continue;
      }
      u.key += std::string(key) + ":" + simdjson::minify(value) + ",";
    }
    out.push_back(std::move(u));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Times may differ where the host clock is the TSC: the stream converts ticks with the fit of
// the drain pass that wrote them, the process's own Chrome trace with the fit at its end. Both
// fits share the start anchor, so the difference grows with the time since the start: allowed
// up to 100 ns + 100 ppm of it (NTP slews CLOCK_MONOTONIC by at most 500 ppm, measured
// differences are a few ns per second).
void compareFolded(const std::string& a, const std::string& b) {
  const bool haveA = static_cast<bool>(std::ifstream(a)), haveB = static_cast<bool>(std::ifstream(b));
  if (haveA != haveB) fail(a + (haveA ? " exists, " : " is missing, ") + b + (haveB ? " exists" : " is missing"));
  if (!haveA) return;
  const auto x = readFolded(a), y = readFolded(b);
  if (x.size() != y.size()) fail(a + " and " + b + " list " + std::to_string(x.size()) + " and " + std::to_string(y.size()) + " stacks");
  for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
    if (i->first != j->first) fail(a + " and " + b + " differ at stack " + printable(i->first) + " / " + printable(j->first));
    if (i->second != j->second)
      fail(a + " and " + b + ": stack " + printable(i->first) + " weighs " + std::to_string(i->second) + " and " + std::to_string(j->second));
  }
}

// The process's own Chrome trace and folded files against those rebuilt from its stream
// (cutrace export): the same events (exactly the same times), the same metadata, the
// same folded stacks.
int compareMain(const std::string& a, const std::string& b) {
  simdjson::dom::parser pa, pb;
  simdjson::dom::element da, db;
  if (auto err = pa.load(a).get(da)) fail(a + ": not valid JSON: " + simdjson::error_message(err));
  if (auto err = pb.load(b).get(db)) fail(b + ": not valid JSON: " + simdjson::error_message(err));
  simdjson::dom::array ea, eb;
  simdjson::dom::element ma, mb;
  if (da["traceEvents"].get(ea) || db["traceEvents"].get(eb)) fail("no traceEvents array");
  if (da["metadata"].get(ma) || db["metadata"].get(mb)) fail("no metadata object");
  const std::vector<Untimed> x = untimedEvents(ea), y = untimedEvents(eb);
  std::size_t i = 0, j = 0, shown = 0;
  while (i < x.size() || j < y.size()) {
    if (j == y.size() || (i < x.size() && x[i].key < y[j].key)) {
      if (shown++ < 10) std::cerr << "only in " << a << ": " << printable(x[i].key) << "\n";
      ++i;
    } else if (i == x.size() || y[j].key < x[i].key) {
      if (shown++ < 10) std::cerr << "only in " << b << ": " << printable(y[j].key) << "\n";
      ++j;
    } else {
      if (x[i].ts != y[j].ts || x[i].dur != y[j].dur) {
        if (shown++ < 10)
          std::cerr << "times differ: " << printable(x[i].key) << " ts " << x[i].ts << "/" << y[j].ts << " dur " << x[i].dur
                    << "/" << y[j].dur << "\n";
      }
      ++i;
      ++j;
    }
  }
  if (shown > 0) fail(std::to_string(shown) + " difference(s) between the traceEvents of " + a + " and " + b);
  if (simdjson::minify(ma) != simdjson::minify(mb))
    fail("metadata differ:\n  " + simdjson::minify(ma) + "\n  " + simdjson::minify(mb));
  const std::string stemA = a.substr(0, a.size() - std::string(".trace.json").size());
  const std::string stemB = b.substr(0, b.size() - std::string(".trace.json").size());
  for (const char* suffix : {".folded", ".calls.folded", ".gpu.folded"}) compareFolded(stemA + suffix, stemB + suffix);
  std::cout << "same: " << x.size() << " events, metadata, folded stacks\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--compare") return compareMain(argv[2], argv[3]);
  if (argc < 2) {
    std::cerr << "usage: trace_check TRACE.json [--folded FILE] [--thread-ids FILE] [--allow-drops]\n";
    return 2;
  }
  std::string foldedPath, tidsPath, view, flamegraph;
  bool allowDrops = false, expectLinked = false, expectDwarf = false, groupThreads = false, uncountedGaps = false;
  int maxDroppedPercent = -1, maxFallbacks = -1;
  uint64_t expectedDropped = 0;
  double maxBytesPerEvent = -1;
  std::string issuedPath;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--folded" && i + 1 < argc) foldedPath = argv[++i];
    else if (a == "--thread-ids" && i + 1 < argc) tidsPath = argv[++i];
    else if (a == "--allow-drops") allowDrops = true;
    else if (a == "--uncounted-gaps") uncountedGaps = true;
    else if (a == "--dropped" && i + 1 < argc) expectedDropped = std::stoull(argv[++i]);
    else if (a == "--max-dropped-percent" && i + 1 < argc) allowDrops = true, maxDroppedPercent = atoi(argv[++i]);
    else if (a == "--view" && i + 1 < argc) view = argv[++i];
    else if (a == "--expect-linked") expectLinked = true;
    else if (a == "--expect-dwarf") expectDwarf = true;
    else if (a == "--stacks") listStacks = true;
    else if (a == "--python-frames" && i + 1 < argc) pythonFile = argv[++i];
    else if (a == "--named" && i + 1 < argc) namedModule = argv[++i];
    else if (a == "--max-fallbacks" && i + 1 < argc) maxFallbacks = atoi(argv[++i]);
    else if (a == "--flamegraph" && i + 1 < argc) flamegraph = argv[++i];
    else if (a == "--max-bytes-per-event" && i + 1 < argc) maxBytesPerEvent = atof(argv[++i]);
    else if (a == "--issued" && i + 1 < argc) issuedPath = argv[++i];
    else if (a == "--names" && i + 1 < argc) allowedNames = splitList(argv[++i], ',');
    else if (a == "--instant" && i + 1 < argc) instantNames.insert(argv[++i]);
    else if (a == "--children" && i + 1 < argc) {
      const auto [parent, children] = splitRule(argv[++i], "--children wants PARENT=A|B");
      childRules[parent] = splitList(children, '|');
    } else if (a == "--count" && i + 1 < argc) {
      const auto [name, count] = splitRule(argv[++i], "--count wants NAME=N");
      expectedCounts[name] = std::stoull(count);
    } else if (a == "--stacked" && i + 1 < argc) stackedNames.insert(argv[++i]);
    else if (a == "--handle-pair" && i + 1 < argc) {
      const auto [makers, enders] = splitRule(argv[++i], "--handle-pair wants MADE|...=ENDED|...");
      handlePairs.push_back({splitList(makers, '|'), splitList(enders, '|'), {}, {}});
    }
    else if (a == "--group-threads") groupThreads = true;
    else if (a == "--counter-values") counterValues = true;
    else if (a == "--streams") showStreams = true;
    else if (a == "--handles") showHandles = true;
    else fail("unknown argument " + a);
  }

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(argv[1]).get(doc)) fail(std::string("not valid JSON: ") + simdjson::error_message(err));
  simdjson::dom::array events;
  simdjson::dom::object meta;
  if (doc["traceEvents"].get(events)) fail("no traceEvents array");
  if (doc["metadata"].get(meta)) fail("no metadata object");
  int64_t pid = 0;
  if (meta["pid"].get(pid)) fail("metadata.pid missing");

  std::map<int64_t, Thread> threads;
  std::map<std::string, std::size_t> deviceCounts;
  std::set<int64_t> deviceTids;
  std::map<uint64_t, std::pair<int, int>> flows;
  std::map<uint64_t, std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>>> hostFlows;  // id -> (starts, finishes)
  std::size_t counterEvents = 0;
  std::map<std::string, std::vector<std::pair<double, std::string>>> counterSeries;  // name -> (ts, values)
  std::map<int64_t, std::string> threadNames;
  std::string processName;
  // Streams and handles are labelled in the order of their first use in time, not in the file's
  // order: a drain pass writes each thread's events together, in an order between threads that
  // depends on when the pass ran (a thread whose events came first in one run came second in
  // another, and the labels of the streams both used swapped).
  {
    using Labels = std::map<std::string, std::size_t>;
    std::vector<std::tuple<int64_t, std::size_t, Labels*, std::string>> uses;  // ts, position, labels, value
    std::size_t position = 0;
    for (simdjson::dom::object e : events) {
      ++position;
      double ts;
      simdjson::dom::object args;
      int64_t tid = -1;
      if (e["ts"].get(ts) || e["args"].get(args) || e["tid"].get(tid) || isGpuTrack(tid)) continue;
      simdjson::dom::element v;
      for (auto [key, labels] : {std::pair{"handle", &handleLabels}, std::pair{"stream", &streamLabels}})
        if (args[key].get(v) == simdjson::SUCCESS) uses.emplace_back(toNs(ts), position, labels, str(v));
    }
    std::sort(uses.begin(), uses.end());
    for (const auto& [ts, at, labels, value] : uses) labelOf(*labels, value);
  }
  for (simdjson::dom::object e : events) {
    const std::string ph = str(e["ph"]);
    int64_t epid = -1, tid = -1;
    if (ph.empty() || e["pid"].get(epid) || e["tid"].get(tid)) fail("event without ph/pid/tid");
    if (epid != pid) fail("event pid differs from metadata.pid");
    if (ph == "M") {
      const std::string what = str(e["name"]);
      if (what == "thread_name") threadNames[tid] = str(e["args"]["name"]);
      else if (what == "thread_sort_index") continue;
      else if (what == "process_name") processName = str(e["args"]["name"]);
      continue;
    }
    if (ph == "e") continue;  // end of an async NVTX span; its "b" carries the content
    if (ph == "C") {
      double ts;
      if (e["ts"].get(ts) || e["args"].error()) fail("counter event without ts/args");
      ++counterEvents;
      if (counterValues) {
        simdjson::dom::object args;
        if (e["args"].get(args)) fail("counter event whose args are not an object");
        std::string values;
        for (auto field : args) {
          uint64_t v;
          if (field.value.get(v)) fail("counter value that is not an unsigned integer");
          values += (values.empty() ? "" : ",") + std::string(field.key) + "=" + std::to_string(v);
        }
        counterSeries[str(e["name"])].emplace_back(ts, values);
      }
      continue;
    }
    if (ph == "s" || ph == "f") {
      uint64_t id;
      if (e["id"].get(id)) fail("flow event without a numeric id");
      if (ph == "s") ++flows[id].first;
      else ++flows[id].second;
      const std::string cat = str(e["cat"]);
      // Host-to-host flows (PyTorch forward -> backward) are listed by the slices they join.
      double ts = 0;
      if (cat == "autograd" && e["ts"].get(ts) == simdjson::SUCCESS)
        (ph == "s" ? hostFlows[id].first : hostFlows[id].second) = {tid, toNs(ts)};
      continue;
    }
    if (isGpuTrack(tid)) {
      const std::string cat = str(e["cat"]);
      if (cat != "kernel" && cat != "memcpy" && cat != "memset") fail("unexpected cat on a GPU track: " + cat);
      double dur;
      if (e["dur"].get(dur) || dur < 0) fail("device event without a valid dur");
      ++deviceCounts[cat];
      deviceTids.insert(tid);
      continue;
    }
    Ev ev;
    ev.ph = ph;
    ev.cat = str(e["cat"]);
    ev.name = str(e["name"]);
    double ts = 0, dur = 0;
    if (e["ts"].get(ts)) fail("event without ts: " + ev.name);
    ev.ts = toNs(ts);
    if (ph == "X") {
      if (e["dur"].get(dur) || dur < 0) fail("X event without a valid dur: " + ev.name);
      ev.dur = toNs(dur);
      if (ev.cat != "cuda_runtime" && ev.cat != "cuda_driver" && ev.cat != "nvtx") fail("unexpected cat " + ev.cat);
    }
    simdjson::dom::object args;
    if (e["args"].get(args) || args["seq"].get(ev.seq)) fail("event without args.seq: " + ev.name);
    ev.args = renderArgs(args, ev.hasKernel);
    ev.stack = renderStack(args);
    simdjson::dom::element domain;
    if (args["domain"].get(domain) == simdjson::SUCCESS) ev.domain = str(domain);
    const bool onDomainTrack = ev.cat == "nvtx" && !ev.domain.empty() && (ph == "X" || ph == "i");
    if (onDomainTrack != isDomainTrack(tid))
      fail("NVTX domain '" + ev.domain + "' event " + ev.name + " on track " + std::to_string(tid));
    if (!allowedNames.empty() && !allowedNames.count(ev.name)) fail("unexpected event name '" + printable(ev.name) + "'");
    if (instantNames.count(ev.name) && ph != "i") fail("'" + ev.name + "' is a " + ph + " event, not an instant");
    if (stackedNames.count(ev.name) && ev.stack.empty()) fail("'" + ev.name + "' (seq " + std::to_string(ev.seq) + ") has no call stack");
    for (HandlePair& pair : handlePairs) {
      const bool maker = pair.makers.count(ev.name) != 0;
      simdjson::dom::element v;
      if ((!maker && pair.enders.count(ev.name) == 0) || args["result"].get(v) == simdjson::SUCCESS) continue;
      (maker ? pair.made : pair.ended).insert(args["handle"].get(v) == simdjson::SUCCESS ? str(v) : "");
    }
    Thread& t = threads[tid];
    t.tid = tid;
    t.events.push_back(std::move(ev));
  }
  if (processName.empty()) fail("no process_name metadata event");
  for (const HandlePair& pair : handlePairs) {
    const std::string makers = *pair.makers.begin() + (pair.makers.size() > 1 ? "|..." : "");
    if (pair.made.empty()) fail("--handle-pair: no " + makers + " succeeded");
    if (pair.made.count("") != 0 || pair.ended.count("") != 0) fail("an event of --handle-pair " + makers + " without args.handle");
    if (pair.made != pair.ended) fail("the handles " + makers + " made are not those ended");
  }
  launchesView = view == "launches";
  const bool shapeView = view == "shape";
  if (!view.empty() && !launchesView && !shapeView) fail("unknown view " + view);
  if (maxBytesPerEvent >= 0) {
    struct stat st;
    if (stat(argv[1], &st) != 0) fail("cannot stat the trace");
    const double perEvent = static_cast<double>(st.st_size) / static_cast<double>(std::max<std::size_t>(events.size(), 1));
    if (perEvent > maxBytesPerEvent)
      fail("the trace holds " + std::to_string(perEvent) + " bytes per event, more than " + std::to_string(maxBytesPerEvent));
  }
  // A domain track belongs to its thread, and is named after it.
  for (const auto& [tid, name] : threadNames) {
    if (!isDomainTrack(tid)) continue;
    auto owner = threadNames.find(ownerThread(tid));
    if (owner == threadNames.end()) fail("domain track " + std::to_string(tid) + " of no thread");
    auto t = threads.find(tid);
    if (t == threads.end() || t->second.events.empty()) fail("domain track " + std::to_string(tid) + " without events");
    const std::string domain = t->second.events[0].domain;
    if (name != owner->second + " nvtx domain " + domain) fail("domain track named '" + name + "'");
    for (const Ev& ev : t->second.events)
      if (ev.domain != domain) fail("domain track '" + name + "' holds an event of domain " + ev.domain);
  }
  for (int64_t tid : deviceTids)
    if (!threadNames.count(tid)) fail("GPU track " + std::to_string(tid) + " has no thread_name");
  // Perfetto ignores a start whose (id, cat, name) is open and drops an end whose flow has
  // ended (flow_tracker.cc): two pairs under one id are one arrow.
  for (const auto& [id, ends] : flows)
    if (ends.first != 1 || ends.second != 1)
      fail("flow " + std::to_string(id) + " is not one s and one f: Perfetto draws one arrow of them");
  std::multiset<std::string> autogradFlows;
  auto sliceAt = [&](std::pair<int64_t, int64_t> at) {
    auto t = threads.find(at.first);
    if (t != threads.end())
      for (const Ev& ev : t->second.events)
        if (ev.ph == "X" && ev.ts == at.second) return printable(ev.name);
    fail("flow end at no slice start");
    return std::string();
  };
  for (const auto& [id, ends] : hostFlows) autogradFlows.insert(sliceAt(ends.first) + " -> " + sliceAt(ends.second));

  for (const auto& [name, expected] : expectedCounts) {
    uint64_t n = 0;
    for (const auto& [tid, t] : threads)
      for (const auto& ev : t.events) n += ev.name == name;
    if (n != expected)
      fail(std::to_string(n) + " events named '" + name + "', expected " + std::to_string(expected));
  }
  uint64_t dropped = 0;
  if (meta["dropped_events"].get(dropped)) fail("metadata.dropped_events missing");
  if (!issuedPath.empty()) {
    std::ifstream in(issuedPath);
    uint64_t issued = 0;
    if (!(in >> issued)) fail("cannot read the issued count from " + issuedPath);
    uint64_t recorded = 0;
    for (const auto& [tid, t] : threads) recorded += t.events.size();
    if (recorded + dropped != issued)
      fail(std::to_string(recorded) + " events recorded + " + std::to_string(dropped) + " dropped != " +
           std::to_string(issued) + " issued");
  }
  if (dropped != expectedDropped && !allowDrops)
    fail("trace reports " + std::to_string(dropped) + " dropped events, expected " + std::to_string(expectedDropped));
  if (maxDroppedPercent >= 0) {
    uint64_t recorded = 0;
    if (meta["events"].get(recorded)) fail("metadata.events missing");
    if (dropped * 100 > static_cast<uint64_t>(maxDroppedPercent) * (recorded + dropped))
      fail(std::to_string(dropped) + " of " + std::to_string(recorded + dropped) + " events dropped, more than " +
           std::to_string(maxDroppedPercent) + "%");
  }

  std::vector<Thread*> ordered;
  std::size_t launches = 0, total = 0;
  for (auto& [tid, t] : threads) {
    auto nameIt = threadNames.find(tid);
    if (nameIt == threadNames.end()) fail("no thread_name for tid " + std::to_string(tid));
    t.name = nameIt->second;
    std::vector<std::size_t> order(t.events.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Ev& x = t.events[a];
      const Ev& y = t.events[b];
      if (x.ts != y.ts) return x.ts < y.ts;
      return x.dur > y.dur;
    });
    // Nesting and seq order.
    std::vector<std::size_t> stack;
    std::vector<std::size_t> roots;
    int64_t lastSeq = -1;
    for (std::size_t idx : order) {
      Ev& e = t.events[idx];
      if (e.seq <= lastSeq) fail("seq not increasing on tid " + std::to_string(tid) + " at " + e.name);
      lastSeq = e.seq;
      while (!stack.empty() && t.events[stack.back()].ts + t.events[stack.back()].dur <= e.ts) stack.pop_back();
      if (!stack.empty()) {
        const Ev& parent = t.events[stack.back()];
        if (e.ph == "X" && e.ts + e.dur > parent.ts + parent.dur)
          fail("event " + e.name + " overlaps the end of " + parent.name + " on tid " + std::to_string(tid));
        // A range whose pop was lost (end_lost, unclosed) ends where the drain found out: it
        // may hold anything that came before.
        auto rule = childRules.find(parent.name);
        const bool endKnown = parent.args.find(" end_lost") == std::string::npos && parent.args.find(" unclosed") == std::string::npos;
        if (endKnown && rule != childRules.end() && !rule->second.count(e.name))
          fail("'" + e.name + "' inside '" + parent.name + "' on tid " + std::to_string(tid));
        t.events[stack.back()].children.push_back(idx);
      } else {
        roots.push_back(idx);
      }
      bool insideLaunch = false;
      for (std::size_t s : stack) {
        if (t.events[s].hasKernel && e.hasKernel) fail("kernel reported twice for one launch: " + e.name);
        if (isLaunchName(t.events[s].name)) insideLaunch = true;
      }
      if ((e.cat == "cuda_runtime" || e.cat == "cuda_driver") && isLaunchName(e.name) && !insideLaunch &&
          !e.hasKernel)
        fail("outermost launch without args.kernel: " + e.name);
      if (e.hasKernel) ++launches;
      ++total;
      if (e.ph == "X") stack.push_back(idx);
      t.deepest = std::max(t.deepest, stack.size());
    }
    if (!shapeView)
      for (std::size_t r : roots) render(t, t.events[r], 0, t.rendered);
    ordered.push_back(&t);
  }
  std::sort(ordered.begin(), ordered.end(), [](const Thread* a, const Thread* b) {
    if (a->name != b->name) return a->name < b->name;
    return a->rendered < b->rendered;
  });

  if (!tidsPath.empty()) {
    std::ifstream in(tidsPath);
    if (!in) fail("cannot open " + tidsPath);
    std::string name;
    int64_t tid;
    std::size_t n = 0;
    while (in >> name >> tid) {
      auto it = threads.find(tid);
      if (it == threads.end()) fail("thread " + name + " (tid " + std::to_string(tid) + ") has no events in the trace");
      if (it->second.name != name) fail("tid " + std::to_string(tid) + " is named '" + it->second.name + "', expected " + name);
      ++n;
    }
    if (n == 0) fail("no thread ids in " + tidsPath);
  }

  // --expect-dwarf: the dwarf walk, with no stack left to its fallback (--max-fallbacks 0).
  if (expectDwarf) {
    std::string_view unwinder;
    if (meta["stacks"]["unwinder"].get(unwinder)) fail("metadata.stacks without unwinder");
    if (!unwinder.starts_with("dwarf")) fail("unwinder is '" + std::string(unwinder) + "', expected the dwarf walk");
    if (maxFallbacks < 0) maxFallbacks = 0;
  }
  if (maxFallbacks >= 0) {
    uint64_t fallbacks = 0;
    if (meta["stacks"]["unwind_fallbacks"].get(fallbacks)) fail("metadata.stacks without unwind_fallbacks");
    if (fallbacks > static_cast<uint64_t>(maxFallbacks))
      fail(std::to_string(fallbacks) + " stacks were left to the fallback unwinder, at most " +
           std::to_string(maxFallbacks) + " expected");
  }
  uint64_t mismatches = 0;  // only present under CUTRACE_UNWIND=verify, which every test expects to agree
  if (meta["stacks"]["unwind_mismatches"].get(mismatches) == simdjson::SUCCESS && mismatches != 0)
    fail(std::to_string(mismatches) + " stacks differ between the dwarf walk and libunwind");

  if (expectLinked) {
    if (deviceCounts["kernel"] != launches)
      fail("launches " + std::to_string(launches) + " != device kernels " + std::to_string(deviceCounts["kernel"]));
    if (flows.size() < deviceCounts["kernel"]) fail("some kernels have no flow from their launch");
  }

  // Every sequence number a thread used and did not deliver was counted as dropped: the gaps
  // in seq equal metadata.threads[].dropped (the tests end each thread with an event that
  // fits, so no drop hides after the last seq).
  simdjson::dom::array metaThreads;
  if (meta["threads"].get(metaThreads)) fail("metadata.threads missing");
  uint64_t droppedThreads = 0;
  for (simdjson::dom::object mt : metaThreads) {
    int64_t tid = 0;
    uint64_t threadDropped = 0, seqEnd = 0;
    if (mt["tid"].get(tid) || mt["dropped"].get(threadDropped)) fail("metadata.threads entry without tid/dropped");
    // The thread's own track and its NVTX domain tracks share its sequence numbers.
    std::set<uint64_t> seqs;
    for (const auto& [track, t] : threads)
      if (ownerThread(track) == tid)
        for (const Ev& ev : t.events) seqs.insert(ev.seq);
    if (seqs.empty()) continue;
    // seq_end (known once a thread exited) also counts drops after the last delivered event.
    const bool knowsEnd = mt["seq_end"].get(seqEnd) == simdjson::SUCCESS;
    if (knowsEnd && !seqs.empty() && *seqs.rbegin() >= seqEnd) fail("thread " + std::to_string(tid) + ": seq beyond seq_end");
    const uint64_t gaps = knowsEnd ? seqEnd - seqs.size() : seqs.empty() ? 0 : *seqs.rbegin() + 1 - seqs.size();
    if (uncountedGaps ? gaps < threadDropped : gaps != threadDropped)
      fail("thread " + std::to_string(tid) + ": " + std::to_string(gaps) + " gaps in seq but " +
           std::to_string(threadDropped) + " dropped");
    droppedThreads += threadDropped > 0;
  }

  // The folded stacks hold the X events of the threads' own tracks (NVTX domain tracks are no
  // frames), their depth cut as metadata.folded says.
  std::size_t hostEvents = 0;
  for (const auto& [tid, t] : threads)
    if (!isDomainTrack(tid))
      for (const Ev& ev : t.events) hostEvents += ev.ph == "X";
  uint64_t depthCapped = 0, maxFrames = 0;
  if (!foldedPath.empty() &&
      (meta["folded"]["depth_capped"].get(depthCapped) || meta["folded"]["max_frames"].get(maxFrames)))
    fail("metadata.folded without depth_capped/max_frames");

  std::ostringstream summary;
  summary << "process " << processName << "\n";
  int64_t rank = -1;
  if (meta["rank"].get(rank) == simdjson::SUCCESS) {
    const std::string file = argv[1];
    if (file.find("-rank" + std::to_string(rank) + ".trace.json") == std::string::npos)
      fail("metadata.rank " + std::to_string(rank) + " but the file is " + file);
    summary << "rank " << rank << "\n";
  }
  std::string_view capture;
  if (meta["capture"].get(capture) == simdjson::SUCCESS && capture != "all") summary << "capture " << capture << "\n";
  if (allowDrops) {
    // What was dropped depends on timing: only the drop-independent facts are summarised.
    summary << "threads " << threads.size() << ", "
            << (maxDroppedPercent >= 0 ? "at most " + std::to_string(maxDroppedPercent) + "%"
                                       : droppedThreads > 0 ? "some" : "none")
            << " dropped, seq gaps equal dropped on every thread\n";
    if (!foldedPath.empty()) checkFolded(foldedPath, summary, false, false, hostEvents, flamegraph);
    std::cout << summary.str();
    return 0;
  }
  std::string_view cuptiState;
  if (meta["cupti"]["state"].get(cuptiState) == simdjson::SUCCESS) summary << "cupti " << cuptiState << "\n";
  if (!launchesView) summary << "threads " << ordered.size() << " events " << total << " launches " << launches << "\n";
  else summary << "threads " << ordered.size() << " launches " << launches << "\n";
  if (!deviceCounts.empty() || counterEvents > 0) {
    summary << "device";
    for (const auto& [cat, n] : deviceCounts) summary << " " << cat << " " << n;
    summary << " flows " << flows.size() << " counters " << (counterEvents > 0 ? "yes" : "no") << "\n";
  }
  for (auto& [name, series] : counterSeries) {
    std::stable_sort(series.begin(), series.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    summary << "counter " << name << ":";
    for (const auto& [ts, values] : series) summary << " " << values;
    summary << "\n";
  }
  for (std::size_t i = 0; i < ordered.size();) {
    const Thread* t = ordered[i];
    std::size_t same = 1;
    while (groupThreads && i + same < ordered.size() && ordered[i + same]->name == t->name &&
           ordered[i + same]->rendered == t->rendered)
      ++same;
    i += same;
    summary << "thread " << t->name << (groupThreads ? " x" + std::to_string(same) : "") << "\n";
    if (!shapeView) {
      summary << t->rendered;
      continue;
    }
    std::size_t x = 0;
    for (const Ev& ev : t->events) x += ev.ph == "X";
    summary << "  X events " << x << " deepest nesting " << t->deepest << "\n";
  }
  for (const std::string& f : autogradFlows) summary << "autograd flow " << f << "\n";
  if (!foldedPath.empty()) {
    checkFolded(foldedPath, summary, !launchesView, shapeView, hostEvents, flamegraph);
    if (depthCapped != 0) summary << "folded depth capped " << depthCapped << " (max frames " << maxFrames << ")\n";
  }
  std::cout << summary.str();
  return 0;
}
