// `cutrace flame`: folded stacks (FlameGraph format) to an SVG flamegraph, laid out like
// flamegraph.pl so users get what they know, without needing Perl on the machine.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tools/commands.h"
#include "tools/input_file.h"
#include "tools/output_file.h"

namespace cutrace::tools {
namespace {

// flamegraph.pl's geometry, so graphs look the same side by side.
constexpr int kFontSize = 12;
constexpr double kFontWidth = 0.59;
constexpr int kFrameHeight = 16;
constexpr int kFramePad = 1;
constexpr int kXPad = 10;
constexpr int kYPadTop = kFontSize * 3;
constexpr int kYPadBottom = kFontSize * 2 + 10;
constexpr int kMinImageWidth = 64;
constexpr int kMaxImageWidth = 1000000;
// A folded line is one stack: 16 MiB is far past any real one (thousands of frames), and bounds
// what an endless line (/dev/zero, a stray binary file) can cost.
constexpr std::size_t kMaxLineBytes = std::size_t{16} << 20;

struct Options {
  std::string title = "Flame Graph";
  std::string countName = "samples";
  std::string input = "-";
  std::string output;  // empty: stdout
  int width = 1200;
  double minWidth = 0.1;
  bool inverted = false;
};

// Nodes live in one arena and refer to children by index, so a very deep stack neither
// recurses while being built, laid out, nor destroyed.
struct Node {
  std::map<std::string, std::size_t> children;  // std::string orders bytewise: deterministic
  uint64_t total = 0;
};

struct Tree {
  std::vector<Node> nodes{Node{}};
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: cutrace flame [options] [FILE]\n"
               "Render FlameGraph folded stacks ('root;...;leaf WEIGHT' per line) as an SVG.\n"
               "FILE '-' or none reads standard input.\n\n"
               "options:\n"
               "  -o, --output OUT.svg  write here instead of standard output\n"
               "  --title TEXT          title (default \"Flame Graph\")\n"
               "  --width PX            image width (default 1200)\n"
               "  --min-width PX        omit frames narrower than this (default 0.1)\n"
               "  --count-name TEXT     unit of the weights shown on hover (default \"samples\";\n"
               "                        cutrace's .folded and .gpu.folded weigh nanoseconds: ns)\n"
               "  --inverted            icicle graph: root at the top\n"
               "  -h, --help            this text\n\n"
               "Frames under a CUDA launch frame (cu*Launch*) and frames named \"[gpu]...\" are\n"
               "drawn in blue-green; all others in the warm palette.\n");
}

// Valid UTF-8 that XML accepts: undecodable bytes and characters XML 1.0 forbids (controls
// other than tab, U+FFFE, U+FFFF) become U+FFFD, so the SVG always parses.
std::string sanitize(std::string_view s) {
  static constexpr std::string_view kReplacement = "\xef\xbf\xbd";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\t') {
        out += kReplacement;
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    std::size_t len = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4, cp = c & 0x07, min = 0x10000;
    }
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    ok = ok && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) && cp != 0xfffe &&
         cp != 0xffff;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

void appendEscaped(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out.push_back(c);
    }
  }
}

std::string escaped(std::string_view s) {
  std::string out;
  appendEscaped(out, s);
  return out;
}

// Like flamegraph.pl: as many characters as fit at ~0.59 em each, ".." marking a cut, and
// nothing below three characters. Counts code points so a cut never splits a character.
std::string label(std::string_view name, double widthPx) {
  const auto fit = static_cast<std::size_t>(widthPx / (kFontSize * kFontWidth));
  if (fit < 3) return {};
  std::size_t points = 0;
  std::size_t cut = name.size();
  for (std::size_t i = 0; i < name.size(); ++i) {
    if ((static_cast<unsigned char>(name[i]) & 0xc0) == 0x80) continue;
    if (points == fit - 2) cut = i;
    ++points;
  }
  if (points <= fit) return std::string(name);
  return std::string(name.substr(0, cut)) + "..";
}

std::string percent(uint64_t part, uint64_t total) {
  std::string p = fmt::format("{:.2f}", 100.0 * static_cast<double>(part) / static_cast<double>(total));
  while (p.back() == '0') p.pop_back();
  if (p.back() == '.') p.pop_back();
  return p;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, ...: the folded exporter puts the
// launched kernel's name directly under such a frame (not under cudaLaunchHostFunc: no kernel).
bool isLaunch(std::string_view name) {
  return startsWith(name, "cu") && name.find("Launch") != std::string_view::npos &&
         name.find("LaunchHostFunc") == std::string_view::npos;
}

// A CUDA API call (cudaMalloc, cuLaunchKernel), as opposed to a kernel name under a launch.
bool isCudaApi(std::string_view name) {
  return startsWith(name, "cuda") || (name.size() > 2 && startsWith(name, "cu") && name[2] >= 'A' && name[2] <= 'Z');
}

std::string colour(std::string_view name, bool gpu) {
  const uint64_t h = fnv1a(name);
  const auto v1 = static_cast<unsigned>(h & 0xff);
  const auto v2 = static_cast<unsigned>((h >> 8) & 0xff);
  const auto v3 = static_cast<unsigned>((h >> 16) & 0xff);
  if (gpu) return fmt::format("rgb({},{},{})", 50 + 60 * v1 / 255, 165 + 55 * v1 / 255, 165 + 55 * v2 / 255);
  return fmt::format("rgb({},{},{})", 205 + 50 * v3 / 255, 230 * v1 / 255, 55 * v2 / 255);
}

std::optional<uint64_t> parseWeight(std::string_view s) {
  uint64_t v = 0;
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Reads the folded lines one at a time (memory is the tree plus one line). Returns the one
// message for malformed or unreadable input, empty when all of it was read.
std::string parseFolded(InputStream& in, Tree& tree) {
  std::vector<std::string> frames;
  std::string_view line;
  std::string error;
  const auto bad = [&](std::string_view what) { return fmt::format("{}:{}: {}", in.name(), in.lineNumber(), what); };
  while (in.nextLine(line, kMaxLineBytes, error)) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::size_t space = line.rfind(' ');
    if (space == std::string_view::npos) return bad("expected 'stack WEIGHT'");
    const std::optional<uint64_t> weight = parseWeight(line.substr(space + 1));
    if (!weight) return bad("weight is not a non-negative 64-bit integer");
    std::string_view stack = line.substr(0, space);
    frames.clear();
    for (;;) {
      const std::size_t semi = stack.find(';');
      const std::string_view frame = stack.substr(0, semi);
      if (frame.empty()) return bad("empty frame name");
      frames.push_back(sanitize(frame));
      if (semi == std::string_view::npos) break;
      stack.remove_prefix(semi + 1);
    }
    if (tree.nodes[0].total > UINT64_MAX - *weight) return bad("total weight overflows 64 bits");
    std::size_t cur = 0;
    tree.nodes[cur].total += *weight;
    for (std::string& f : frames) {
      auto [it, added] = tree.nodes[cur].children.try_emplace(std::move(f), tree.nodes.size());
      cur = it->second;
      if (added) tree.nodes.emplace_back();
      tree.nodes[cur].total += *weight;
    }
  }
  return error;
}

struct Box {
  std::string_view name;
  uint64_t total;
  uint64_t offset;  // weight left of this frame, in the root's units
  int depth;
  bool gpu;
};

// Pre-order, children by name, pruned below the minimum width: the order frames are drawn in,
// and left to right at each depth (the zoom script relies on it).
std::vector<Box> layout(const Tree& tree, double pxPerUnit, double minWidth) {
  struct Pending {
    std::size_t node;
    Box box;
  };
  std::vector<Box> boxes;
  std::vector<Pending> todo{{0, Box{"all", tree.nodes[0].total, 0, 0, false}}};
  while (!todo.empty()) {
    const Pending p = todo.back();
    todo.pop_back();
    if (static_cast<double>(p.box.total) * pxPerUnit < minWidth) continue;
    boxes.push_back(p.box);
    const Node& node = tree.nodes[p.node];
    const bool launch = isLaunch(p.box.name);
    const std::size_t first = todo.size();
    uint64_t offset = p.box.offset;
    for (const auto& [name, index] : node.children) {
      const uint64_t total = tree.nodes[index].total;
      const bool gpu = p.box.gpu || startsWith(name, "[gpu]") || (launch && !isCudaApi(name));
      todo.push_back({index, Box{name, total, offset, p.box.depth + 1, gpu}});
      offset += total;
    }
    std::reverse(todo.begin() + static_cast<std::ptrdiff_t>(first), todo.end());
  }
  return boxes;
}

// Click a frame to zoom to it, "Reset Zoom" to go back, "Search" to highlight frames whose
// name matches a regular expression; hovering shows the frame's title at the bottom.
constexpr std::string_view kScript = R"JS(
var W,inv,frames,det,pad=10,fw=7.08;
function nm(g){var t=g.querySelector("title").textContent;var i=t.lastIndexOf(" (");return i<0?t:t.slice(0,i);}
function init(e){var s=document.documentElement;W=+s.getAttribute("width");inv=s.getAttribute("data-inverted")=="1";
det=document.getElementById("details").firstChild;frames=[].slice.call(document.querySelectorAll("#frames > g"));
frames.forEach(function(g){var r=g.querySelector("rect");g.ox=+r.getAttribute("x");g.ow=+r.getAttribute("width");
g.oy=+r.getAttribute("y");g.n=nm(g);g.onclick=function(){zoom(g);};
g.onmouseover=function(){det.nodeValue=g.querySelector("title").textContent;};g.onmouseout=function(){det.nodeValue=" ";};});
document.getElementById("unzoom").onclick=function(){zoom(null);};document.getElementById("search").onclick=search;}
function deeper(a,b){return inv?a.oy>b.oy:a.oy<b.oy;}
function place(g,x,w){var r=g.querySelector("rect"),t=g.querySelector("text"),n=Math.floor(w/fw);
r.setAttribute("x",x.toFixed(2));r.setAttribute("width",w.toFixed(2));t.setAttribute("x",(x+3).toFixed(2));
t.textContent=n<3?"":g.n.length<=n?g.n:g.n.slice(0,n-2)+"..";}
function zoom(f){var x0=f?f.ox:pad,w0=f?f.ow:W-2*pad,s=(W-2*pad)/w0,e=0.005;
document.getElementById("unzoom").style.display=f?"":"none";
frames.forEach(function(g){var inside=g.ox>=x0-e&&g.ox+g.ow<=x0+w0+e;
if(!f||(inside&&(g===f||deeper(g,f)))){place(g,pad+(g.ox-x0)*s,g.ow*s);g.style.display="";g.style.opacity="";}
else if(g.ox<=x0+e&&g.ox+g.ow>=x0+w0-e&&deeper(f,g)){place(g,pad,W-2*pad);g.style.display="";g.style.opacity="0.6";}
else g.style.display="none";});}
function search(){var m=document.getElementById("matched").firstChild,q=prompt("Search (regular expression)","");
var re=null;try{re=q?new RegExp(q):null;}catch(x){return;}var sum=0,end=-1;
frames.forEach(function(g){var r=g.querySelector("rect");if(re&&re.test(g.n)){r.style.fill="rgb(230,0,230)";
if(g.ox>=end-0.005){sum+=g.ow;end=g.ox+g.ow;}}else r.style.fill="";});
m.nodeValue=re?"Matched: "+(100*sum/frames[0].ow).toFixed(2)+"%":" ";}
)JS";

std::string renderSvg(const Tree& tree, const Options& opt) {
  const uint64_t total = tree.nodes[0].total;
  const double usable = opt.width - 2 * kXPad;
  const double pxPerUnit = total == 0 ? 0.0 : usable / static_cast<double>(total);
  const std::vector<Box> boxes = total == 0 ? std::vector<Box>{} : layout(tree, pxPerUnit, opt.minWidth);
  int maxDepth = 0;
  for (const Box& b : boxes) maxDepth = std::max(maxDepth, b.depth);
  const int rows = boxes.empty() ? 2 : maxDepth + 1;
  const int height = rows * kFrameHeight + kYPadTop + kYPadBottom;

  std::string out;
  auto put = std::back_inserter(out);
  fmt::format_to(put,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" onload=\"init(evt)\" data-inverted=\"{2}\">\n"
                 "<style>text{{font-family:Verdana,sans-serif;font-size:{3}px;fill:rgb(0,0,0)}}"
                 "#title{{font-size:17px}}#unzoom,#search{{cursor:pointer}}"
                 "#frames > g:hover rect{{stroke:rgb(0,0,0);stroke-width:0.5}}#frames > g{{cursor:pointer}}</style>\n"
                 "<script type=\"text/ecmascript\"><![CDATA[{4}]]></script>\n"
                 "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"rgb(248,248,240)\"/>\n"
                 "<text id=\"title\" x=\"{5:.2f}\" y=\"24\" text-anchor=\"middle\">{6}</text>\n"
                 "<text id=\"unzoom\" x=\"{7}\" y=\"24\" style=\"display:none\">Reset Zoom</text>\n"
                 "<text id=\"search\" x=\"{8}\" y=\"24\">Search</text>\n"
                 "<text id=\"details\" x=\"{7}\" y=\"{9}\"> </text>\n"
                 "<text id=\"matched\" x=\"{8}\" y=\"{9}\"> </text>\n",
                 opt.width, height, opt.inverted ? 1 : 0, kFontSize, kScript, opt.width / 2.0,
                 escaped(sanitize(opt.title)), kXPad, opt.width - kXPad - 100, height - 17);
  if (total == 0) {
    fmt::format_to(put, "<text id=\"empty\" x=\"{:.2f}\" y=\"{}\" text-anchor=\"middle\">no samples</text>\n",
                   opt.width / 2.0, kYPadTop + kFrameHeight);
  }
  out += "<g id=\"frames\">\n";
  const std::string unit = escaped(sanitize(opt.countName));
  for (const Box& b : boxes) {
    // Rounding both edges (not the width) keeps a child exactly inside its parent.
    const double x1 = std::round((kXPad + static_cast<double>(b.offset) * pxPerUnit) * 100) / 100;
    const double x2 = std::round((kXPad + static_cast<double>(b.offset + b.total) * pxPerUnit) * 100) / 100;
    const int y1 = opt.inverted ? kYPadTop + b.depth * kFrameHeight
                                : height - kYPadBottom - (b.depth + 1) * kFrameHeight + kFramePad;
    out += "<g><title>";
    appendEscaped(out, b.name);
    fmt::format_to(put, " ({} {}, {}%)</title>", b.total, unit, percent(b.total, total));
    fmt::format_to(put, "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" rx=\"2\" ry=\"2\"/>",
                   x1, y1, x2 - x1, kFrameHeight - kFramePad, colour(b.name, b.gpu));
    fmt::format_to(put, "<text x=\"{:.2f}\" y=\"{:.1f}\">", x1 + 3, y1 + (kFrameHeight - kFramePad) / 2.0 + 3.5);
    appendEscaped(out, label(b.name, x2 - x1));
    out += "</text></g>\n";
  }
  out += "</g>\n</svg>\n";
  return out;
}

// Returns an exit status when the command should stop here (help, usage error).
std::optional<int> parseArgs(int argc, char** argv, Options& opt) {
  bool haveInput = false;
  bool optionsDone = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> inlineValue;
    if (!optionsDone && startsWith(arg, "--") && arg.find('=') != std::string_view::npos) {
      inlineValue = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
    }
    auto value = [&]() -> std::optional<std::string_view> {
      if (inlineValue) return inlineValue;
      if (i + 1 < argc) return std::string_view(argv[++i]);
      return std::nullopt;
    };
    auto bad = [&](std::string_view what) {
      spdlog::error("flame: {}", what);
      usage(stderr);
      return kExitUsage;
    };
    if (optionsDone || arg == "-" || !startsWith(arg, "-")) {
      if (haveInput) return bad("more than one input file");
      opt.input = std::string(arg);
      haveInput = true;
    } else if (arg == "--") {
      optionsDone = true;
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return kExitOk;
    } else if (arg == "--inverted" && !inlineValue) {
      opt.inverted = true;
    } else if (arg == "-o" || arg == "--output" || arg == "--title" || arg == "--count-name" ||
               arg == "--width" || arg == "--min-width") {
      const std::optional<std::string_view> v = value();
      if (!v) return bad(fmt::format("{} needs a value", arg));
      if (arg == "-o" || arg == "--output") {
        if (v->empty()) return bad("empty output path");
        opt.output = std::string(*v);
      } else if (arg == "--title") {
        opt.title = std::string(*v);
      } else if (arg == "--count-name") {
        opt.countName = std::string(*v);
      } else if (arg == "--width") {
        const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), opt.width);
        if (ec != std::errc{} || end != v->data() + v->size() || opt.width < kMinImageWidth ||
            opt.width > kMaxImageWidth) {
          return bad(fmt::format("--width wants an integer from {} to {}", kMinImageWidth, kMaxImageWidth));
        }
      } else {
        const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), opt.minWidth);
        if (ec != std::errc{} || end != v->data() + v->size() || !std::isfinite(opt.minWidth) || opt.minWidth < 0) {
          return bad("--min-width wants a non-negative number");
        }
      }
    } else {
      return bad(fmt::format("unknown option '{}'", arg));
    }
  }
  return std::nullopt;
}

int run(int argc, char** argv) {
  Options opt;
  if (const std::optional<int> status = parseArgs(argc, argv, opt)) return *status;
  InputStream in;
  std::string error;
  Tree tree;
  if (!in.open(opt.input, error) || !(error = parseFolded(in, tree)).empty()) {
    spdlog::error("flame: {}", error);
    return kExitBadInput;
  }
  if (!writeOutputText(opt.output, renderSvg(tree, opt), error)) {
    spdlog::error("flame: {}", error);
    return kExitOutput;
  }
  return kExitOk;
}

}  // namespace

int flameCommand(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    spdlog::error("flame: out of memory: too many distinct stacks");
    return kExitBadInput;
  } catch (const std::exception& e) {
    spdlog::error("flame: {}", e.what());
    return kExitOutput;
  }
}

}  // namespace cutrace::tools
