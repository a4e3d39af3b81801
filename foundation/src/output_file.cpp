#include "gridcast/foundation/output_file.hpp"
#include "gridcast/foundation/signal_chain.hpp"

#include "gridcast/foundation/errors.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace gridcast {

namespace fs = std::filesystem;

namespace {

// The temporaries open right now, so that a run ended by SIGINT or SIGTERM (Ctrl-C, a batch system's
// time limit) leaves no hidden partial file behind. A fixed table of plain character arrays: the signal
// handler may only read memory and call unlink(2). A slot's path is complete before `used` is set.
constexpr int kSlots = 32;
enum SlotState : int { kFree = 0, kFilling = 1, kOpen = 2 };
struct TemporarySlot {
  std::atomic<int> state{kFree};
  char path[4096] = {0};
};
TemporarySlot g_temporaries[kSlots];
std::atomic<bool> g_handlers_installed{false};
struct sigaction g_old_int {}, g_old_term {};

void remove_temporaries() noexcept
{
  for (auto& slot : g_temporaries)
    if (slot.state.load() == kOpen)
      unlink(slot.path);
}

/// Removes the temporaries, then does what the signal did before: the handler installed before this
/// one (SimGrid's Ctrl-C handler prints the actors' state and exits), or the default (death by it).
void on_signal(int sig, siginfo_t* info, void* context)
{
  remove_temporaries();
  const struct sigaction& old = sig == SIGINT ? g_old_int : g_old_term;
  chain_signal(old, sig, info, context);
}

/// For a handler installed after this one that exits without chaining: exit() runs static destructors.
struct RemoveAtExit {
  ~RemoveAtExit() { remove_temporaries(); }
} g_remove_at_exit;

/// Registers `temporary` for removal on SIGINT and SIGTERM; -1 when it cannot be (then it is still
/// removed on every other way out, by the destructor).
int claim_slot(const fs::path& temporary)
{
  if (not g_handlers_installed.exchange(true)) {
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &g_old_int);
    sigaction(SIGTERM, &sa, &g_old_term);
  }
  const std::string& p = temporary.native();
  if (p.size() >= sizeof TemporarySlot::path)
    return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (g_temporaries[i].state.compare_exchange_strong(expected, kFilling)) {
      std::memcpy(g_temporaries[i].path, p.c_str(), p.size() + 1);
      g_temporaries[i].state.store(kOpen);
      return i;
    }
  }
  return -1;
}

void release_slot(int slot)
{
  if (slot >= 0)
    g_temporaries[slot].state.store(kFree);
}

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
  if (not in_place_)
    slot_ = claim_slot(temporary_);
  file_ = std::fopen(temporary_.c_str(), "wb");
  if (file_ == nullptr) {
    const int err = errno;
    release_slot(slot_);
    fail(target_, what_, "write", err);
  }
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
  release_slot(slot_);
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
    release_slot(slot_);
    fail(target_, what_, "write", err);
  }
  if (in_place_)
    return;
  std::error_code ec;
  fs::rename(temporary_, target_, ec);
  release_slot(slot_);  // renamed (or removed below): a signal from here on finds nothing to remove
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
