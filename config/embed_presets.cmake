# Writes OUTPUT, a C++ source defining sandgate::defaults::presets(), from every *.txt file in
# INPUT_DIR (config/presets): the preset's name is the file's name without `.txt`. Bytes are
# written as numbers, so any content survives (quotes, backslashes, UTF-8). Presets are listed
# in name order, so the output does not depend on the directory's order.
file(GLOB files "${INPUT_DIR}/*.txt")
list(SORT files)
set(arrays "")
set(rows "")
foreach(path IN LISTS files)
  get_filename_component(name "${path}" NAME_WE)
  if(NOT name MATCHES "^[a-z0-9][a-z0-9-]*$")
    message(FATAL_ERROR "${path}: a preset's name is lower-case letters, digits and '-'")
  endif()
  string(MAKE_C_IDENTIFIER "${name}" id)
  file(READ "${path}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND arrays "constexpr char k_${id}[] = {${bytes} 0};\n")
  string(APPEND rows "    {\"${name}\", {k_${id}, ${size}}},\n")
endforeach()
file(WRITE ${OUTPUT}
"// Generated from config/presets/*.txt by config/embed_presets.cmake. Do not edit.\n"
"#include \"config/embedded_defaults.hpp\"\n\n"
"#include <array>\n\n"
"namespace sandgate::defaults {\n"
"namespace {\n"
"${arrays}"
"}  // namespace\n\n"
"std::span<const Preset> presets() {\n"
"  static constexpr Preset kPresets[] = {\n"
"${rows}"
"  };\n"
"  return kPresets;\n"
"}\n\n"
"}  // namespace sandgate::defaults\n")
