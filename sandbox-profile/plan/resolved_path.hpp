// Paths as Seatbelt and Landlock see them: absolute and resolved.
#pragma once

#include <string>

namespace sandgate::sandbox {

// `path` made absolute (against the working folder) and normal, with symbolic links resolved as
// far as the path exists: Seatbelt and Landlock see resolved paths (on macOS /var is
// /private/var). Only lexical clean-up when the file system cannot be asked.
std::string resolved_path(const std::string& path);

}  // namespace sandgate::sandbox
