#pragma once

#include <cstddef>

namespace cutrace::test {

// The most bytes this process held through operator new at once, since a HeapPeak began: the
// unit tests' replacement operator new and delete (heap_meter.cpp) count every block by its
// usable size. A bound on memory a piece of code takes while it runs, which the bytes held after
// it (mallinfo) do not show.
class HeapPeak {
 public:
  HeapPeak();
  // Bytes above the level at the start, at the highest point since.
  std::size_t rise() const;

 private:
  std::size_t start_;
};

}  // namespace cutrace::test
