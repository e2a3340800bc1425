#include "exporters/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "exporters/output_files.h"

namespace cutrace {

namespace {

constexpr char kMagic[8] = {'C', 'U', 'T', 'J', 'R', 'N', 'L', '1'};
enum Chunk : uint32_t { kProcess = 1, kStrings = 2, kThread = 3, kEvents = 4, kStacks = 5, kClock = 6, kCategories = 7 };

class Out {
 public:
  explicit Out(std::string& b) : b_(b) {}
  template <typename T>
  void pod(const T& v) {
    b_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void str(std::string_view s) {
    pod(static_cast<uint32_t>(s.size()));
    b_.append(s);
  }
  void raw(const void* p, std::size_t n) { b_.append(static_cast<const char*>(p), n); }

 private:
  std::string& b_;
};

// Opens a chunk; close() patches its length.
struct ChunkWriter {
  std::string& b;
  std::size_t at;
  ChunkWriter(std::string& buffer, uint32_t type) : b(buffer), at(buffer.size()) {
    Out o(b);
    o.pod(type);
    o.pod(uint32_t{0});
  }
  void close() {
    const auto len = static_cast<uint32_t>(b.size() - at - 8);
    memcpy(&b[at + 4], &len, sizeof(len));
  }
};

class In {
 public:
  In(const char* p, std::size_t n) : p_(p), end_(p + n) {}
  template <typename T>
  bool pod(T& v) {
    if (static_cast<std::size_t>(end_ - p_) < sizeof(T)) return false;
    memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool str(std::string& s) {
    uint32_t n = 0;
    if (!pod(n) || static_cast<std::size_t>(end_ - p_) < n) return false;
    s.assign(p_, n);
    p_ += n;
    return true;
  }
  bool raw(void* dst, std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n) return false;
    memcpy(dst, p_, n);
    p_ += n;
    return true;
  }
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

bool JournalWriter::append(const TraceData& data, const char* directory, ClockAnchor start, ClockAnchor last,
                           bool ticksAreNs) {
  if (failed_) return false;
  if (!file_.created()) {
    std::string error;
    const std::string dir = directory;
    if (!makeDirectories(dir, error)) {
      failed_ = true;
      return false;
    }
    const int dirfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
      failed_ = true;
      return false;
    }
    const std::string base = outputStem(data.meta);
    for (int attempt = 0; attempt < kStemAttempts && !file_.created(); ++attempt) {
      if (!file_.create(dirfd, dir, numberedStem(base, attempt) + ".journal") && errno != EEXIST && errno != ELOOP) break;
    }
    close(dirfd);
    if (!file_.created() || file_.append(kMagic, sizeof(kMagic)) != WriteStatus::Ok) {
      failed_ = true;
      return false;
    }
  }
  buffer_.clear();
  Out o(buffer_);
  if (!wroteProcess_) {
    ChunkWriter c(buffer_, kProcess);
    const TraceMeta& m = data.meta;
    o.pod(m.pid);
    o.pod(static_cast<int32_t>(m.rank));
    o.pod(m.originMonotonicNs);
    o.pod(m.realtimeMinusMonotonicNs);
    o.str(m.clockSource);
    o.str(m.exe);
    o.str(m.hostname);
    o.str(m.capture);
    o.pod(static_cast<uint32_t>(m.commandLine.size()));
    for (const std::string& a : m.commandLine) o.str(a);
    o.pod(static_cast<uint32_t>(data.hooks.size()));
    for (const HookDescriptor& h : data.hooks) {
      o.str(h.displayName);
      o.pod(static_cast<uint8_t>(h.layer));
      o.pod(static_cast<uint8_t>(h.kind));
    }
    c.close();
    wroteProcess_ = true;
  }
  if (data.strings.size() > strings_) {
    ChunkWriter c(buffer_, kStrings);
    o.pod(static_cast<uint32_t>(strings_));
    o.pod(static_cast<uint32_t>(data.strings.size() - strings_));
    for (std::size_t i = strings_; i < data.strings.size(); ++i) o.str(data.strings.get(static_cast<uint32_t>(i)));
    c.close();
    strings_ = data.strings.size();
  }
  if (threads_.size() < data.threads.size()) threads_.resize(data.threads.size());
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    const ThreadTrack& track = data.threads[t];
    ThreadMark& mark = threads_[t];
    if (!mark.written || mark.name != track.name || mark.dropped != track.dropped || mark.lostEnds != track.lostEnds ||
        mark.seqEnd != track.seqEnd) {
      ChunkWriter c(buffer_, kThread);
      o.pod(static_cast<uint32_t>(t));
      o.pod(track.tid);
      o.pod(track.pthreadLow);
      o.str(track.name);
      o.pod(track.dropped);
      o.pod(track.lostEnds);
      o.pod(track.seqEnd);
      c.close();
      mark.written = true;
      mark.seqEnd = track.seqEnd;
      mark.name = track.name;
      mark.dropped = track.dropped;
      mark.lostEnds = track.lostEnds;
    }
    if (track.events.size() > mark.events) {
      ChunkWriter c(buffer_, kEvents);
      o.pod(static_cast<uint32_t>(t));
      o.pod(static_cast<uint32_t>(track.events.size() - mark.events));
      for (std::size_t i = mark.events; i < track.events.size(); ++i) o.raw(&track.events[i], sizeof(Event));
      c.close();
      mark.events = track.events.size();
    }
  }
  if (data.stacks.size() > stacks_ + 1 || (stacks_ == 0 && data.stacks.size() > 1)) {
    const std::size_t from = stacks_ == 0 ? 1 : stacks_;
    ChunkWriter c(buffer_, kStacks);
    o.pod(static_cast<uint32_t>(from));
    o.pod(static_cast<uint32_t>(data.stacks.size() - from));
    for (std::size_t i = from; i < data.stacks.size(); ++i) {
      o.pod(static_cast<uint32_t>(data.stacks[i].size()));
      for (uint32_t f : data.stacks[i]) o.pod(f);
    }
    c.close();
    stacks_ = data.stacks.size();
  }
  if (data.categoryNames.size() != categories_) {
    ChunkWriter c(buffer_, kCategories);
    o.pod(static_cast<uint32_t>(data.categoryNames.size()));
    for (const auto& [key, name] : data.categoryNames) {
      o.pod(key);
      o.pod(name);
    }
    c.close();
    categories_ = data.categoryNames.size();
  }
  if (buffer_.empty()) return true;  // nothing new since the last pass
  {
    ChunkWriter c(buffer_, kClock);
    o.pod(start);
    o.pod(last);
    o.pod(static_cast<uint8_t>(ticksAreNs));
    c.close();
  }
  // A pass is one append: a file cut short by the end of the process ends with a whole pass or
  // a partial chunk, which readers ignore.
  if (file_.append(buffer_.data(), buffer_.size()) != WriteStatus::Ok) {
    failed_ = true;
    return false;
  }
  return true;
}

void JournalWriter::discard() { file_.remove(); }

void JournalWriter::forget() {
  file_.forget();
  failed_ = false;
  wroteProcess_ = false;
  strings_ = stacks_ = categories_ = 0;
  threads_.clear();
}

bool readJournal(const std::string& path, TraceData& out, std::string& error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    error = "cannot open " + path + ": " + strerror(errno);
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(kMagic) || memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    error = path + ": not a cutrace journal";
    return false;
  }
  In in(bytes.data() + sizeof(kMagic), bytes.size() - sizeof(kMagic));
  std::vector<std::string> strings;
  bool sawProcess = false;
  ClockAnchor start{}, last{};
  uint8_t ticksAreNs = 1;
  auto bad = [&](const char* what) {
    error = path + ": malformed " + what + " chunk";
    return false;
  };
  std::vector<std::string> hookNames;
  std::vector<std::pair<uint8_t, uint8_t>> hookKinds;
  while (in.left() >= 8) {
    uint32_t type = 0, len = 0;
    in.pod(type);
    in.pod(len);
    if (in.left() < len) break;  // the process ended while this chunk was being written
    std::string payload(len, '\0');
    in.raw(payload.data(), len);
    In c(payload.data(), payload.size());
    switch (type) {
      case kProcess: {
        TraceMeta& m = out.meta;
        int32_t rank = -1;
        uint32_t args = 0, hooks = 0;
        if (!c.pod(m.pid) || !c.pod(rank) || !c.pod(m.originMonotonicNs) || !c.pod(m.realtimeMinusMonotonicNs) ||
            !c.str(m.clockSource) || !c.str(m.exe) || !c.str(m.hostname) || !c.str(m.capture) || !c.pod(args) ||
            args > 100000)
          return bad("process");
        m.rank = rank;
        m.commandLine.assign(args, std::string());
        for (std::string& a : m.commandLine)
          if (!c.str(a)) return bad("process");
        if (!c.pod(hooks) || hooks > 65535) return bad("process");
        hookNames.assign(hooks, std::string());
        hookKinds.assign(hooks, {0, 0});
        for (uint32_t h = 0; h < hooks; ++h)
          if (!c.str(hookNames[h]) || !c.pod(hookKinds[h].first) || !c.pod(hookKinds[h].second)) return bad("process");
        sawProcess = true;
        break;
      }
      case kStrings: {
        uint32_t first = 0, count = 0;
        if (!c.pod(first) || !c.pod(count) || first != strings.size()) return bad("strings");
        for (uint32_t i = 0; i < count; ++i) {
          std::string s;
          if (!c.str(s)) return bad("strings");
          strings.push_back(std::move(s));
        }
        break;
      }
      case kThread: {
        uint32_t index = 0;
        ThreadTrack t;
        if (!c.pod(index) || index > 1000000 || !c.pod(t.tid) || !c.pod(t.pthreadLow) || !c.str(t.name) ||
            !c.pod(t.dropped) || !c.pod(t.lostEnds))
          return bad("thread");
        while (out.threads.size() <= index) out.threads.emplace_back();
        ThreadTrack& dst = out.threads[index];
        dst.tid = t.tid;
        dst.pthreadLow = t.pthreadLow;
        dst.name = t.name;
        dst.dropped = t.dropped;
        dst.lostEnds = t.lostEnds;
        if (c.left() >= sizeof(uint64_t)) c.pod(dst.seqEnd);
        break;
      }
      case kEvents: {
        uint32_t index = 0, count = 0;
        if (!c.pod(index) || !c.pod(count) || index >= out.threads.size() || c.left() != uint64_t{count} * sizeof(Event))
          return bad("events");
        for (uint32_t i = 0; i < count; ++i) {
          Event e;
          c.raw(&e, sizeof(Event));
          if (!out.threads[index].events.push_back(e)) {
            error = path + ": out of memory";
            return false;
          }
        }
        break;
      }
      case kStacks: {
        uint32_t first = 0, count = 0;
        if (!c.pod(first) || !c.pod(count) || first == 0 || count > 10000000) return bad("stacks");
        if (out.stacks.size() < std::size_t{first} + count) out.stacks.resize(std::size_t{first} + count);
        for (uint32_t i = 0; i < count; ++i) {
          uint32_t depth = 0;
          if (!c.pod(depth) || depth > 4096) return bad("stacks");
          std::vector<uint32_t>& frames = out.stacks[first + i];
          frames.assign(depth, 0);
          for (uint32_t& f : frames)
            if (!c.pod(f)) return bad("stacks");
        }
        break;
      }
      case kClock:
        if (!c.pod(start) || !c.pod(last) || !c.pod(ticksAreNs)) return bad("clock");
        break;
      case kCategories: {
        uint32_t count = 0;
        if (!c.pod(count) || count > 1000000) return bad("categories");
        out.categoryNames.clear();
        for (uint32_t i = 0; i < count; ++i) {
          uint64_t key = 0;
          uint32_t name = 0;
          if (!c.pod(key) || !c.pod(name)) return bad("categories");
          out.categoryNames[key] = name;
        }
        break;
      }
      default:
        break;  // a chunk type from a newer writer
    }
  }
  if (!sawProcess) {
    error = path + ": the journal ends before its process record";
    return false;
  }
  // Strings keep their ids: the pool's id 0 is the empty string, as in the writer.
  for (std::size_t i = 1; i < strings.size(); ++i) out.strings.intern(strings[i]);
  if (out.strings.size() != std::max<std::size_t>(strings.size(), 1)) {
    error = path + ": duplicate strings in the journal";
    return false;
  }
  for (std::size_t h = 0; h < hookNames.size(); ++h) {
    out.hookNames.push_back(hookNames[h]);
    out.hooks.push_back(HookDescriptor{out.hookNames.back().c_str(), static_cast<ApiLayer>(hookKinds[h].first & 1),
                                       static_cast<ApiKind>(hookKinds[h].second <= static_cast<uint8_t>(ApiKind::Register) ? hookKinds[h].second : 0)});
  }
  out.meta.ticks = TickConverter(start, last, ticksAreNs != 0);
  out.meta.endMonotonicNs = last.monotonicNs;
  out.cupti.state = "off";
  out.cupti.reason = "recovered from a journal: the process ended before it could write its trace";
  return true;
}

}  // namespace cutrace
