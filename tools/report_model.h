#pragma once
// The model behind `cutrace report` and `cutrace diff`: cutrace Chrome traces read with
// simdjson's on-demand parser (error codes only, so hostile input is a message, never a crash)
// and aggregated into rows keyed by name; plus the output helpers both commands share.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace simdjson {
class padded_string_view;
}

namespace cutrace::tools {

class InputBytes;

enum class Section { Api = 0, Kernel = 1, Nvtx = 2, Op = 3 };
inline constexpr std::size_t kSectionCount = 4;
inline constexpr std::array<const char*, kSectionCount> kSectionKeys = {"api", "kernel", "nvtx", "op"};

struct Row {
  std::string name;
  std::string layer;  // api rows: "runtime" or "driver"
  // Op rows grouped by input shapes: the op's sizes as compact JSON text (or the string the
  // tracer wrote when they were not an integer list); empty when not grouped or not recorded.
  std::string shapes;
  uint64_t calls = 0;  // kernel rows: executions seen on a GPU (0 without device events)
  int64_t totalNs = 0;
  int64_t selfNs = 0;  // minus nested children of the same kind on the same thread
  int64_t minNs = 0;
  int64_t maxNs = 0;
  double percent = -1;  // api: of wall; kernel: of GPU busy time; <0 where it does not apply
  // Kernel rows: host launch events (the one event of a launch carrying args.kernel), but for
  // those made into a stream capture (args.captured: their kernel runs in the graph's replays),
  // counted apart with no time.
  uint64_t launches = 0;
  uint64_t captured = 0;
  int64_t hostNs = 0;
  int64_t hostMinNs = 0;
  int64_t hostMaxNs = 0;
  // Op rows: device kernels launched inside this row's op ranges (innermost range only);
  // kernel rows: the GPU figures again, so `--sort gpu` reads one field.
  int64_t gpuNs = 0;
  uint64_t kernels = 0;

  int64_t avgNs() const { return calls == 0 ? 0 : (totalNs + static_cast<int64_t>(calls / 2)) / static_cast<int64_t>(calls); }
};

struct Report {
  std::array<std::vector<Row>, kSectionCount> sections;
  std::array<bool, kSectionCount> present = {true, true, true, true};  // a report written with --by holds fewer
  bool deviceKernels = false;  // kernel rows come from device (CUPTI) events
  int64_t wallNs = 0;          // sum over processes of first-to-last event span
  int64_t gpuBusyNs = 0;       // sum over devices of the union of kernel intervals
  uint32_t processes = 0;
  std::string cuptiNote;       // the first input's CUPTI state and reason, when not "on"
  bool opsGroupedByShapes = false;    // op rows are per (name, input shapes)
  uint64_t opUnmatchedKernels = 0;    // kernels naming an op that no op row could take
};

struct ReadOptions {
  // Op rows per (name, input shapes) instead of per name, as torch.profiler's
  // key_averages(group_by_input_shape=True).
  bool groupByShapes = false;
};

// Reads cutrace traces (several files = several processes) into one report; a path "-" is
// standard input, and pipes are read as streams (input_file.h). False with a message naming
// the file on unreadable or malformed input.
bool readTraces(const std::vector<std::string>& paths, Report& out, std::string& error, const ReadOptions& options = {});

// Reads either a trace or a `cutrace report --format json` output, told apart by content
// (options apply to a trace; a report keeps the grouping it was written with).
bool readTraceOrReport(const std::string& path, Report& out, std::string& error, const ReadOptions& options = {});

// The same readers over bytes already in memory (the fuzz target's entry points); `name`
// stands for the file in messages.
bool readTraceText(std::string_view text, const std::string& name, Report& out, std::string& error);
bool readTraceOrReportText(std::string_view text, const std::string& name, Report& out, std::string& error);

// Reads a JSON input (a path, or "-" for standard input; see input_file.h) whole, at most
// wholeInputCap() bytes, refusing nesting deeper than any trace has (the check every reader
// above applies). False with a message naming the input. paddedView(bytes) is what simdjson
// parses, in place (InputBytes keeps the padding it needs after the bytes).
bool loadJsonFile(const std::string& path, InputBytes& bytes, std::string& error);
simdjson::padded_string_view paddedView(const InputBytes& bytes);
bool jsonTooDeep(std::string_view text);

// "api", "kernel", "nvtx", "op" or "all" (every section; callers drop op when a trace has no
// op ranges).
bool parseSections(const std::string& by, std::vector<Section>& out);

enum class SortKey { Total, Self, Calls, Avg, Min, Max, Gpu, Name };
bool parseSortKey(std::string_view text, SortKey& key);
// By the key descending (name ascending), ties by name then shapes. Kernel rows without device
// events sort by their host launch figures. Gpu: GPU time of kernel and op rows; a table
// without any (api, nvtx, or no device events) sorts by total instead.
void sortRows(std::vector<Row>& rows, SortKey key, bool deviceKernels);

// Human time: 3 decimals of the largest unit among us, ms, s that keeps the value >= 1
// (values under 1 ms print in us).
std::string formatDuration(int64_t ns);
std::string csvField(std::string_view s);

// A text table: first column left-aligned, the rest right-aligned; long names are cut.
std::string renderTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
// The same as a GitHub-flavoured Markdown table (CI job summaries, pull-request comments): the
// same alignment, names whole, every cell's text shown as it is (markdownText).
std::string renderMarkdownTable(const std::vector<std::string>& header,
                                const std::vector<std::vector<std::string>>& rows);
// Text that Markdown shows as it is inside a line (a table cell, after a paragraph's label): the
// ASCII punctuation that could start inline markup (emphasis, code, links, HTML, strikethrough,
// math, emoji, a cell's end) backslash-escaped, line breaks as spaces. Kernel names are full of
// it: `void axpy<float>(float const*, ...)`.
std::string markdownText(std::string_view s);


// Minimal option parsing shared by the subcommands: `--name value`, `--name=value`, `-o value`.
struct Options {
  std::vector<std::pair<std::string, std::string>> values;
  std::vector<std::string> flags;  // the options named in `flags` that were given
  std::vector<std::string> positional;
  bool help = false;
  bool has(std::string_view flag) const;
};
// False (with a message) on an unknown option or a missing value. Every option named in
// `withValue` takes a value, those in `flags` none; `--help`/`-h` set help.
bool parseOptions(int argc, char** argv, const std::vector<std::string_view>& withValue, Options& out, std::string& error);
bool parseOptions(int argc, char** argv, const std::vector<std::string_view>& withValue,
                  const std::vector<std::string_view>& flags, Options& out, std::string& error);

}  // namespace cutrace::tools
