// Paths as the sandboxes see them. See resolved_path.hpp.
#include "sandbox-profile/plan/resolved_path.hpp"

#include <filesystem>

namespace sandgate::sandbox {

std::string resolved_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || path.find('\0') != std::string::npos) {
    return path;  // left for check_path() to refuse with a precise message
  }
  std::error_code ec;
  fs::path absolute = fs::absolute(fs::path(path), ec);
  if (ec) {
    absolute = fs::path(path);
  }
  fs::path resolved = fs::weakly_canonical(absolute, ec);
  if (ec) {
    resolved = absolute.lexically_normal();
  }
  std::string text = resolved.string();
  while (text.size() > 1 && text.back() == '/') {
    text.pop_back();
  }
  return text;
}

}  // namespace sandgate::sandbox
