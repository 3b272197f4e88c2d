// The main() a fuzz target gets in the test and sanitizer trees: every input of the folders (or
// files) named on the command line, once each, through the target's LLVMFuzzerTestOneInput.
// With its corpus and its regressions this is the suite's `fuzz_replay.<target>` test: the seeds
// and every input that once failed are run again on each build, under ASan and UBSan in
// build-asan/, with the targets' own invariant checks (fuzz_check.hpp), which abort on a broken
// one. Mutating new inputs is libFuzzer's job, in the clang tree (`make fuzz`, run.sh).
//
// A folder's files are taken in name order, but dot files and notes (*.md); a missing folder, an
// unreadable file, one larger than kLargestInput or a run with no input at all fails, so that a
// typo cannot make the test pass without replaying anything.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// Larger than any committed seed or regression by far; a larger file is a mistake to be told.
constexpr std::uintmax_t kLargestInput = 1 << 20;

bool is_input(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name.front() != '.' && path.extension() != ".md";
}

// The inputs `argument` names (a file, or a folder's files in name order); false when it names
// nothing readable.
bool collect(const fs::path& argument, std::vector<fs::path>& inputs) {
  std::error_code error;
  if (fs::is_regular_file(argument, error)) {
    inputs.push_back(argument);
    return true;
  }
  if (!fs::is_directory(argument, error)) {
    std::fprintf(stderr, "fuzz replay: %s is neither a file nor a folder\n", argument.c_str());
    return false;
  }
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(argument, error)) {
    if (entry.is_regular_file() && is_input(entry.path())) {
      found.push_back(entry.path());
    }
  }
  if (error) {
    std::fprintf(stderr, "fuzz replay: cannot list %s: %s\n", argument.c_str(),
                 error.message().c_str());
    return false;
  }
  std::sort(found.begin(), found.end());
  inputs.insert(inputs.end(), found.begin(), found.end());
  return true;
}

bool read_input(const fs::path& path, std::string& bytes) {
  std::error_code error;
  const std::uintmax_t size = fs::file_size(path, error);
  if (error || size > kLargestInput) {
    std::fprintf(stderr, "fuzz replay: %s: %s\n", path.c_str(),
                 error ? error.message().c_str() : "larger than 1 MiB");
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    std::fprintf(stderr, "fuzz replay: cannot read %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!collect(argv[i], inputs)) {
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz replay: no input to replay (usage: %s FOLDER_OR_FILE...)\n",
                 argc > 0 ? argv[0] : "replay");
    return 2;
  }
  std::string bytes;
  for (const fs::path& input : inputs) {
    if (!read_input(input, bytes)) {
      return 2;
    }
    // Told before the run: a crash's report then names the input it came from.
    std::fprintf(stderr, "fuzz replay: %s (%zu bytes)\n", input.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("fuzz replay: %zu inputs, no failure\n", inputs.size());
  return 0;
}
