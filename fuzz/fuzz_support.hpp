// What every libFuzzer harness of gridcast shares: the input written to a file (gridcast's readers take
// paths, as the command line does), and the promise under test. A reader given any bytes returns, or throws
// InputError (exit 1, naming the file); anything else is a finding: a crash or sanitizer report (libFuzzer
// stops by itself), another exception (exit 2 "internal error" for bad input), a hang or a memory blow-up
// (libFuzzer's -timeout and -rss_limit_mb). See docs/guides/fuzzing.md.
#pragma once

#include "gridcast/foundation/errors.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::fuzz {

namespace fs = std::filesystem;

/// A scratch folder of this process, emptied for every input (libFuzzer runs inputs one at a time).
inline const fs::path& scratch()
{
  static const fs::path dir = [] {
    fs::path base = fs::temp_directory_path() / ("gridcast-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(base);
    return base;
  }();
  return dir;
}

inline void clear_scratch()
{
  for (const auto& entry : fs::directory_iterator(scratch()))
    fs::remove_all(entry.path());
}

inline fs::path write_file(const fs::path& file, std::string_view bytes)
{
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return file;
}

/// The input as one file named `name` in a fresh scratch folder.
inline fs::path input_file(const std::uint8_t* data, std::size_t size, const std::string& name)
{
  clear_scratch();
  return write_file(scratch() / name, {reinterpret_cast<const char*>(data), size});
}

/// Several files in one input: parts separated by a line "%%" (seed corpora are written this way). The
/// newline before "%%" is the separator's, not the part's, so that a binary part keeps its exact bytes.
inline std::vector<std::string_view> split_parts(const std::uint8_t* data, std::size_t size)
{
  std::string_view all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  constexpr std::string_view kSeparator = "\n%%\n";
  for (;;) {
    auto at = all.find(kSeparator);
    if (at == std::string_view::npos) {
      parts.push_back(all);
      return parts;
    }
    parts.push_back(all.substr(0, at));
    all.remove_prefix(at + kSeparator.size());
  }
}

/// Runs `read` on one input: InputError is the answer to bad input; every other exception is a finding.
template <class Read>
int expect_input_errors(Read&& read)
{
  try {
    read();
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: not an InputError: %s\n", e.what());
    std::abort();
  }
  return 0;
}

}  // namespace gridcast::fuzz
