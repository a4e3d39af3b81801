#pragma once
// Results are never half-written: a file is written under a temporary name beside its target and renamed
// over it only once every byte reached the disk. A run that fails, throws or is interrupted leaves the
// previous file (or none), never a truncated prediction.json or model.json that looks complete. A run
// ended by SIGINT or SIGTERM removes its temporaries too (a handler installed with the first OutputFile,
// which then does what the signal did before it).
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace gridcast {

class OutputFile {
public:
  /// Opens a temporary file beside `target` (".NAME.tmp-PID"); `what` names the result in errors ("the
  /// prediction"). A target that exists and is not a regular file (a device such as /dev/stdout or
  /// /dev/full, a FIFO) is written in place: it cannot be renamed over, and a failed write still fails.
  /// Throws InputError naming `target` when the directory cannot be written.
  OutputFile(std::filesystem::path target, std::string what);
  ~OutputFile();  ///< without commit(): the temporary file is removed, the target left as it was
  OutputFile(const OutputFile&)            = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// The open stream, for writers that format into it in blocks.
  std::FILE* stream() { return file_; }
  void write(std::string_view bytes);
  /// Flushes, syncs, closes and renames onto the target; throws InputError naming the target and the
  /// system's reason when any byte could not be written (a full disk, /dev/full).
  void commit();

  const std::filesystem::path& target() const { return target_; }

private:
  std::filesystem::path target_, temporary_;
  std::string what_;
  std::FILE* file_ = nullptr;
  bool in_place_   = false;
  int slot_        = -1;  ///< its entry in the table of temporaries a SIGINT or SIGTERM removes
};

/// The whole content at once: OutputFile, write, commit.
void write_file_atomically(const std::filesystem::path& target, std::string_view content, const std::string& what);

}  // namespace gridcast
