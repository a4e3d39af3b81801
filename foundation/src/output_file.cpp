#include "gridcast/foundation/output_file.hpp"

#include "gridcast/foundation/errors.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace gridcast {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& target, const std::string& what, const std::string& doing, int err)
{
  throw InputError({target.string(), 0, {}, -1},
                   "cannot " + doing + " " + what + ": " + std::strerror(err != 0 ? err : EIO));
}

}  // namespace

OutputFile::OutputFile(fs::path target, std::string what) : target_(std::move(target)), what_(std::move(what))
{
  std::error_code ec;
  const fs::file_status st = fs::status(target_, ec);
  if (fs::is_directory(st))
    throw InputError({target_.string(), 0, {}, -1}, "is a directory: cannot write " + what_ + " there");
  in_place_ = fs::exists(st) && not fs::is_regular_file(st);
  if (in_place_) {
    temporary_ = target_;
  } else {
    // Beside the target (one file system, so the rename is atomic), hidden, and unique per process.
    temporary_ = target_.parent_path() / ("." + target_.filename().string() + ".tmp-" + std::to_string(getpid()));
  }
  file_ = std::fopen(temporary_.c_str(), "wb");
  if (file_ == nullptr)
    fail(target_, what_, "write", errno);
}

OutputFile::~OutputFile()
{
  if (file_ == nullptr)
    return;
  std::fclose(file_);
  if (not in_place_) {
    std::error_code ec;
    fs::remove(temporary_, ec);
  }
}

void OutputFile::write(std::string_view bytes)
{
  if (not bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    fail(target_, what_, "write", errno);
}

void OutputFile::commit()
{
  // Every way a byte can be lost is checked: a buffered write (fflush), the device (fsync of a regular
  // file; ENOSPC often shows only here), the close.
  int err = 0;
  if (std::fflush(file_) != 0 || std::ferror(file_) != 0)
    err = errno != 0 ? errno : EIO;
  if (err == 0 && not in_place_ && fsync(fileno(file_)) != 0)
    err = errno;
  const int closed = std::fclose(file_);
  file_            = nullptr;
  if (err == 0 && closed != 0)
    err = errno != 0 ? errno : EIO;
  if (err != 0) {
    if (not in_place_) {
      std::error_code ec;
      fs::remove(temporary_, ec);
    }
    fail(target_, what_, "write", err);
  }
  if (in_place_)
    return;
  std::error_code ec;
  fs::rename(temporary_, target_, ec);
  if (ec) {
    fs::remove(temporary_, ec);
    fail(target_, what_, "replace", ec.value());
  }
}

void write_file_atomically(const fs::path& target, std::string_view content, const std::string& what)
{
  OutputFile out(target, what);
  out.write(content);
  out.commit();
}

}  // namespace gridcast
