#pragma once
// Stack frame names as the Chrome trace shows them in args.stack.
//
// Demangled C++ names of template-heavy code (PyTorch's dispatcher, std::function, lambdas)
// run to hundreds or thousands of characters per frame; repeated on every call of a 20-frame
// stack they made the Chrome trace several kilobytes per event. Perfetto shows args.stack as
// text to read, so there a long template argument or parameter list is elided while short
// ones stay, which keeps overloads and small instantiations apart. The folded files keep the
// full names (they hold each stack once).

#include <string>
#include <string_view>

namespace cutrace {

// A template argument list "<...>" or parameter list "(...)" whose text between the brackets
// is longer than this many bytes is shown as "<…>" or "(…)".
inline constexpr std::size_t kShownGroupBytes = 32;
// A name still longer than this after elision is cut (at a UTF-8 boundary) and ends in "…".
inline constexpr std::size_t kShownFrameBytes = 256;

// `name` as shown: long bracket groups elided, then cut to kShownFrameBytes. Python frames
// ("forward (model.py:42)", "<module> (train.py:3)") and names without long groups come back
// unchanged.
std::string shownFrameName(std::string_view name);

}  // namespace cutrace
