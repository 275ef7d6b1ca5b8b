// A main() for the fuzz targets when they are not linked with libFuzzer (-fsanitize=fuzzer): it
// feeds every file named on the command line (directories: every regular file in them,
// recursively, in name order) to LLVMFuzzerTestOneInput once. The plain g++ build uses it to
// replay the seed corpora and the regression inputs under ctest (tests/fuzz/CMakeLists.txt);
// a crash or a failed check in the target aborts the process, which fails the test.
//
// Usage: <target>_fuzzer [--min-inputs=N] PATH...   (fails when fewer than N inputs were found)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  namespace fs = std::filesystem;
  size_t min_inputs = 0;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--min-inputs=", 0) == 0) {
      min_inputs = std::strtoull(arg.c_str() + 13, nullptr, 10);
      continue;
    }
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg)) {
        if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') {
          files.push_back(entry.path());
        }
      }
    } else if (fs::is_regular_file(arg, ec)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: no such file or directory: %s\n", arg.c_str());
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "replay: %zu inputs ran\n", files.size());
  if (files.size() < min_inputs) {
    std::fprintf(stderr, "replay: expected at least %zu inputs\n", min_inputs);
    return 1;
  }
  return 0;
}
