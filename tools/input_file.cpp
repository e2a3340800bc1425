#include "tools/input_file.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace cutrace::tools {
namespace {

// simdjson's own limit on one document (SIMDJSON_MAXSIZE_BYTES).
constexpr std::size_t kMaxWholeInputBytes = 0xFFFFFFFFu;
constexpr std::size_t kChunk = std::size_t{1} << 16;
constexpr std::size_t kMinGrowth = std::size_t{1} << 20;

std::string describeBytes(std::size_t n) {
  if (n >= (std::size_t{1} << 30)) return fmt::format("{} bytes ({:.1f} GiB)", n, static_cast<double>(n) / (1 << 30));
  if (n >= (std::size_t{1} << 20)) return fmt::format("{} bytes ({:.1f} MiB)", n, static_cast<double>(n) / (1 << 20));
  return fmt::format("{} bytes", n);
}

std::string tooBig(const std::string& name, std::size_t cap) {
  return fmt::format("{}: larger than {}, the most cutrace reads of one input (it holds the input whole in memory)", name,
                     describeBytes(cap));
}

}  // namespace

InputBytes::~InputBytes() { std::free(data_); }

InputBytes::InputBytes(InputBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

InputBytes& InputBytes::operator=(InputBytes&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void InputBytes::clear() {
  std::free(data_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

bool InputBytes::assign(std::string_view bytes) {
  if (!reserve(bytes.size())) return false;
  std::memcpy(data_, bytes.data(), bytes.size());
  size_ = bytes.size();
  std::memset(data_ + size_, 0, kInputPadding);
  return true;
}

bool InputBytes::reserve(std::size_t bytes) {
  if (bytes <= capacity_ && data_ != nullptr) return true;
  void* grown = std::realloc(data_, bytes + kInputPadding);
  if (grown == nullptr) return false;
  data_ = static_cast<char*>(grown);
  capacity_ = bytes;
  return true;
}

std::size_t wholeInputCap() {
  std::size_t cap = kMaxWholeInputBytes;
  // The parser reserves several times the document in address space (simdjson's structural
  // index alone is 4 bytes per input byte, allocated up front).
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) cap = std::min<std::size_t>(cap, rl.rlim_cur / 8);
  return cap;
}

std::string inputName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

bool isRereadable(const std::string& path) {
  struct stat st {};
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

InputStream::~InputStream() {
  if (ownsFd_) ::close(fd_);
}

bool InputStream::open(const std::string& path, std::string& error) {
  name_ = inputName(path);
  if (path == "-") {
    fd_ = STDIN_FILENO;
  } else {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error = fmt::format("{}: cannot open: {}", name_, std::strerror(errno));
      return false;
    }
    ownsFd_ = true;
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    error = fmt::format("{}: cannot read: {}", name_, std::strerror(errno));
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    error = fmt::format("{}: is a directory", name_);
    return false;
  }
  regular_ = S_ISREG(st.st_mode);
  size_ = regular_ ? static_cast<std::size_t>(st.st_size) : 0;
  return true;
}

bool InputStream::checkNul(std::string_view bytes, std::size_t offset, std::string& error) const {
  if (binary_) return true;
  const void* nul = std::memchr(bytes.data(), '\0', bytes.size());
  if (nul == nullptr) return true;
  error = fmt::format("{}: a NUL byte at offset {}: not a text file", name_,
                      offset + static_cast<std::size_t>(static_cast<const char*>(nul) - bytes.data()));
  return false;
}

bool InputStream::fill(std::string& error) {
  if (eof_) return false;
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  } else if (pos_ >= buffer_.size() / 2) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  const std::size_t old = buffer_.size();
  buffer_.resize(old + kChunk);
  for (;;) {
    const ssize_t n = ::read(fd_, buffer_.data() + old, kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      buffer_.resize(old);
      error = fmt::format("{}: cannot read: {}", name_, std::strerror(errno));
      return false;
    }
    buffer_.resize(old + static_cast<std::size_t>(n));
    if (n == 0) {
      eof_ = true;
      return false;
    }
    const std::size_t offset = consumed_;
    consumed_ += static_cast<std::size_t>(n);
    return checkNul(std::string_view(buffer_).substr(old), offset, error);
  }
}

bool InputStream::nextLine(std::string_view& line, std::size_t maxLine, std::string& error) {
  std::size_t scanned = 0;  // bytes after pos_ known to hold no '\n'
  for (;;) {
    const std::string_view rest = std::string_view(buffer_).substr(pos_);
    const std::size_t nl = rest.find('\n', scanned);
    if (nl != std::string_view::npos || (eof_ && !rest.empty())) {
      const std::size_t len = nl == std::string_view::npos ? rest.size() : nl;
      if (len > maxLine) break;
      line = rest.substr(0, len);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      pos_ += nl == std::string_view::npos ? len : len + 1;
      ++line_;
      return true;
    }
    if (rest.size() > maxLine) break;
    scanned = rest.size();
    if (!fill(error) && !eof_) return false;
    if (eof_ && pos_ == buffer_.size()) return false;
  }
  error = fmt::format("{}:{}: a line longer than {}: not a text file of lines", name_, line_ + 1, describeBytes(maxLine));
  return false;
}

bool InputStream::readAll(std::size_t maxBytes, InputBytes& out, std::string& error) {
  out.clear();
  auto fail = [&](std::string message) {
    out.clear();
    error = std::move(message);
    return false;
  };
  const auto outOfMemory = [&] { return fail(fmt::format("{}: out of memory reading it whole", name_)); };
  if (regular_ && size_ > maxBytes) return fail(tooBig(name_, maxBytes));
  const std::size_t buffered = buffer_.size() - pos_;
  // One byte past the cap is read to tell "exactly the cap" from "more"; a regular file is
  // read in one allocation (plus one byte, to see it end).
  const std::size_t limit = maxBytes + 1;
  const std::size_t first = std::min(limit, regular_ ? buffered + size_ + 1 : kMinGrowth);
  if (!out.reserve(std::max(buffered, first))) return outOfMemory();
  std::memcpy(out.data_, buffer_.data() + pos_, buffered);
  out.size_ = buffered;
  buffer_.clear();
  pos_ = 0;
  while (!eof_ && out.size_ < limit) {
    if (out.size_ == out.capacity_ && !out.reserve(std::min(limit, out.capacity_ * 2))) return outOfMemory();
    const ssize_t n = ::read(fd_, out.data_ + out.size_, std::min(out.capacity_, limit) - out.size_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(fmt::format("{}: cannot read: {}", name_, std::strerror(errno)));
    if (n == 0) {
      eof_ = true;
      break;
    }
    const std::size_t offset = consumed_;
    consumed_ += static_cast<std::size_t>(n);
    if (!checkNul(std::string_view(out.data_ + out.size_, static_cast<std::size_t>(n)), offset, error)) return fail(error);
    out.size_ += static_cast<std::size_t>(n);
  }
  if (out.size_ > maxBytes) return fail(tooBig(name_, maxBytes));
  std::memset(out.data_ + out.size_, 0, kInputPadding);
  return true;
}

bool InputStream::peek(std::size_t n, std::string_view& head, std::string& error) {
  const bool wasBinary = binary_;
  binary_ = true;
  while (buffer_.size() - pos_ < n && !eof_) {
    if (!fill(error) && !eof_) {
      binary_ = wasBinary;
      return false;
    }
  }
  binary_ = wasBinary;
  head = std::string_view(buffer_).substr(pos_, std::min(n, buffer_.size() - pos_));
  return true;
}

bool InputStream::setBinary(bool binary, std::string& error) {
  binary_ = binary;
  const std::size_t buffered = buffer_.size() - pos_;
  return checkNul(std::string_view(buffer_).substr(pos_), consumed_ - buffered, error);
}

bool readInputFile(const std::string& path, std::size_t maxBytes, InputBytes& out, std::string& error) {
  InputStream in;
  out.clear();
  return in.open(path, error) && in.readAll(maxBytes, out, error);
}

}  // namespace cutrace::tools
