# Writes OUTPUT, a C++ source defining sandgate::defaults::blocklist_template(), from INPUT.
# Bytes are written as numbers, so any content survives (quotes, backslashes, UTF-8).
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUTPUT}
"// Generated from config/blocked.txt by config/embed.cmake. Do not edit.\n"
"#include \"config/embedded_defaults.hpp\"\n\n"
"namespace sandgate::defaults {\n"
"namespace {\n"
"constexpr char kBlocklistTemplate[] = {${bytes} 0};\n"
"}  // namespace\n\n"
"std::string_view blocklist_template() { return {kBlocklistTemplate, ${size}}; }\n\n"
"}  // namespace sandgate::defaults\n")
