// The hook's runtime: per-thread buffers, raw files, flushing at every kind of end, the function list and
// application-function names. See core.hpp.
#include "core.hpp"

#include "gridcast/foundation/signal_chain.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <mutex>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include <algorithm>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gridcast::hook {
namespace {

// ------------------------------------------------------------------ global state

constexpr std::size_t kBufferRecords = 4096;  // 384 KiB per thread: a write() every 4096 calls
constexpr int kMaxThreads = 1024;

struct ThreadBuf {
  int fd = -1;
  int index = 0;
  std::atomic<std::size_t> committed{0};  ///< records complete in `records`
  std::atomic<int> busy{0};               ///< a flush is writing `records`
  std::uint64_t appended = 0;             ///< records appended so far (poll folding: nothing in between)
  std::uint64_t flushes = 0;              ///< flushes so far (a folded-into record must still be here)
  std::uint64_t file_bytes = 0;           ///< bytes the file holds (header and whole or cut records)
  std::atomic<int> write_errno{0};        ///< why the file stopped growing (ENOSPC, EFBIG...); 0 while it grows
  std::atomic<std::uint64_t> dropped{0};  ///< records not written after that
  std::vector<bool> defined;              ///< dynamic function ids this thread's file has defined
  /// The records, left uninitialised: a zeroed 416 KiB buffer per thread would touch every page at the
  /// thread's first call (start-up cost); untouched pages cost nothing until records land on them.
  union Slot {
    Slot() {}
    RawRecord r;
  };
  Slot records[kBufferRecords];
};

Config g_config;
char g_dir[4096] = {0};
std::atomic<bool> g_ended{false};
std::atomic<bool> g_initialized{false};  ///< this process called MPI_Init (it owns rank-R.* files)
std::atomic<int> g_rank{-1};
int g_size = 0;
std::int64_t g_init_ns = 0;          // in ticks
// Resident set when MPI_Init returned (the program, its libraries and MPI's own buffers): the rank's data
// footprint is the peak above it (rank-R.meta `init_rss_bytes`, `peak_rss_bytes`; docs/guides/profiling.md).
std::int64_t g_init_rss_bytes = 0;
// The first line of MPI_Get_library_version (rank-R.meta `mpi_library`): kept at init, so that the meta
// written from a signal handler only copies it.
char g_mpi_library[256] = {0};
std::int64_t g_cal_ticks = 0;        // clock calibration: ticks and ns read together when the hook loads
std::int64_t g_cal_ns = 0;
std::int64_t g_ticks_per_s = 1000000000;
std::atomic<int> g_next_thread{0};
ThreadBuf* g_bufs[kMaxThreads] = {};
std::atomic<int> g_nbufs{0};
std::mutex g_open_mutex;

// Function list: names selected (empty = no list).
bool g_have_list = false;
std::unordered_set<std::string>* g_list = nullptr;
bool g_selected[static_cast<int>(Fn::Count)] = {};

struct sigaction g_old_term, g_old_int;

thread_local ThreadBuf* t_buf = nullptr;

/// ThreadBuf::appended before the last call record was pushed (is t_poll right before it?).
thread_local std::uint64_t t_last_call_appended_before = 0;
thread_local std::size_t t_last_call_index = 0;  ///< where append_with_values put its call record

// Async-signal-safe text: decimal formatting by hand, and a fixed buffer written with one write(2).
/// Writes the decimal digits of `v` into `out` (24 bytes are enough); returns how many.
int format_int(char* out, std::int64_t v)
{
  char buf[24];
  int n = 0;
  bool neg = v < 0;
  std::uint64_t u = neg ? static_cast<std::uint64_t>(-(v + 1)) + 1 : static_cast<std::uint64_t>(v);
  do {
    buf[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u > 0);
  if (neg)
    buf[n++] = '-';
  for (int i = 0; i < n; ++i)
    out[i] = buf[n - 1 - i];
  return n;
}

/// Text assembled on the stack and written at once: a process killed while writing its meta file
/// (SIGKILL right after the SIGTERM whose handler is writing it) leaves the old file or the new one,
/// never a mix of both.
struct Text {
  char data[8192];
  std::size_t n = 0;
  void add(const char* s)
  {
    while (*s != '\0' && n + 1 < sizeof data)
      data[n++] = *s++;
  }
  void add_int(std::int64_t v)
  {
    if (n + 24 < sizeof data)
      n += static_cast<std::size_t>(format_int(data + n, v));
  }
  void line(const char* key, const char* value)
  {
    add(key);
    add(" ");
    add(value);
    add("\n");
  }
  void line(const char* key, std::int64_t value)
  {
    add(key);
    add(" ");
    add_int(value);
    add("\n");
  }
};

void rank_path(char* out, std::size_t size, const char* suffix, int thread)
{
  // dir/rank-R[.thread-T].suffix, built by hand: snprintf is not async-signal-safe.
  std::size_t n = 0;
  auto add = [&](const char* s) {
    while (*s && n + 1 < size)
      out[n++] = *s++;
  };
  auto add_int = [&](int v) {
    char tmp[16];
    int k = 0;
    do {
      tmp[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v > 0);
    while (k > 0 && n + 1 < size)
      out[n++] = tmp[--k];
  };
  add(g_dir);
  add("/rank-");
  add_int(g_rank.load() < 0 ? 0 : g_rank.load());
  if (thread >= 0) {
    add(".thread-");
    add_int(thread);
  }
  add(suffix);
  out[n] = 0;
}

/// Ticks per second over the longest interval measured so far (MPI_Init .. now when long enough).
/// Async-signal-safe: clock_gettime and arithmetic only.
std::int64_t ticks_per_s_until_now()
{
  if (not g_tsc_clock)
    return 1000000000;
  std::int64_t ns = clock_ns(), ticks = now_ticks();
  if (ns - g_cal_ns < 50000000)  // under 50 ms: the calibration at MPI_Init is as good
    return g_ticks_per_s;
  return static_cast<std::int64_t>(static_cast<double>(ticks - g_cal_ticks) * 1e9 / static_cast<double>(ns - g_cal_ns));
}

/// The resident set now (/proc/self/statm's second field, in pages), 0 when it cannot be read.
std::int64_t resident_bytes_now()
{
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  char buf[128] = {0};
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  long long size_pages = 0, resident_pages = 0;
  if (std::sscanf(buf, "%lld %lld", &size_pages, &resident_pages) != 2)
    return 0;
  return static_cast<std::int64_t>(resident_pages) * sysconf(_SC_PAGESIZE);
}

/// Writes rank-R.meta: what the converter needs besides the records. `status` says how the run ended.
void write_meta(const char* status, std::int64_t end_ticks, int signal_or_code)
{
  if (not g_config.enabled || g_rank.load() < 0)
    return;
  if (end_ticks != 0)
    g_ticks_per_s = ticks_per_s_until_now();
  char path[4200];
  rank_path(path, sizeof path, ".meta", -1);
  // Rewritten in place, never truncated first: the blocks the file holds (reserved when it is created)
  // stay its own, so the final meta is written on a disk the records have filled.
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  if (end_ticks == 0)
    (void)fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096);  // where the file system cannot, nothing is reserved
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  Text t;
  t.line("rank", g_rank.load());
  t.line("size", g_size);
  t.line("pid", getpid());
  t.line("host", host);
  t.line("init_ticks", g_init_ns);
  t.line("end_ticks", end_ticks);
  t.line("ticks_per_s", g_ticks_per_s);
  t.line("threads", g_next_thread.load());
  t.line("status", status);
  t.line("code", signal_or_code);
  if (g_mpi_library[0] != '\0')
    t.line("mpi_library", g_mpi_library);
  if (end_ticks != 0) {
    // The process's peak resident set (getrusage: a system call, safe in a signal handler), in bytes.
    struct rusage u {};
    // Under SMPI every rank is an actor of one process: its resident set is no rank's footprint.
    if (not GRIDCAST_HOOK_SMPI && getrusage(RUSAGE_SELF, &u) == 0 && g_init_rss_bytes > 0) {
      t.line("init_rss_bytes", g_init_rss_bytes);
      t.line("peak_rss_bytes", static_cast<std::int64_t>(u.ru_maxrss) * 1024);
    }
  }
  // A raw file that stopped growing (disk full, a size limit): the first reason, and the records lost.
  int error = 0;
  std::uint64_t dropped = 0;
  const int nbufs = g_nbufs.load(std::memory_order_acquire);
  for (int i = 0; i < nbufs; ++i)
    if (g_bufs[i] != nullptr) {
      if (error == 0)
        error = g_bufs[i]->write_errno.load();
      dropped += g_bufs[i]->dropped.load();
    }
  if (error != 0) {
    t.line("write_errno", error);
    t.line("records_dropped", static_cast<std::int64_t>(dropped));
  }
  // One write over the old text (the final meta is longer than the one MPI_Init wrote, so no old tail
  // survives even a kill between the write and the truncation), then its length.
  if (pwrite(fd, t.data, t.n, 0) == static_cast<ssize_t>(t.n))
    (void)!ftruncate(fd, static_cast<off_t>(t.n));
  close(fd);
}

/// A write to `b`'s file failed: the file keeps its whole records (a record cut by the failure is taken
/// off, so the converter never reads half of one as the next) and takes no more, because a later write
/// that succeeds (space freed) would land after a gap and shift every record behind it. The meta file
/// says why and how many records were lost. Async-signal-safe: ftruncate and close only.
void stop_file(ThreadBuf* b, int error)
{
  const std::uint64_t header = sizeof(RawHeader);
  if (b->file_bytes >= header) {
    const std::uint64_t whole = header + (b->file_bytes - header) / sizeof(RawRecord) * sizeof(RawRecord);
    if (ftruncate(b->fd, static_cast<off_t>(whole)) == 0)
      b->file_bytes = whole;
  }
  close(b->fd);
  b->fd = -1;
  int expected = 0;
  b->write_errno.compare_exchange_strong(expected, error == 0 ? EIO : error);
}

/// Writes the committed records of `b` to its file. From a signal handler too: only write(2) and atomics.
void flush(ThreadBuf* b)
{
  int expected = 0;
  if (not b->busy.compare_exchange_strong(expected, 1))
    return;  // another flush of this buffer is under way (interrupted by a signal): it writes them
  std::size_t n = b->committed.load(std::memory_order_acquire);
  if (n > 0 && b->fd >= 0) {
    static_assert(sizeof(ThreadBuf::Slot) == sizeof(RawRecord));
    const char* p = reinterpret_cast<const char*>(b->records);
    std::size_t left = n * sizeof(RawRecord);
    while (left > 0) {
      ssize_t w = write(b->fd, p, left);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        stop_file(b, errno);  // disk full, a file size limit: never crash the application
        break;
      }
      p += w;
      left -= static_cast<std::size_t>(w);
      b->file_bytes += static_cast<std::uint64_t>(w);
    }
    if (left > 0)
      b->dropped.fetch_add((left + sizeof(RawRecord) - 1) / sizeof(RawRecord));
  } else if (n > 0) {
    b->dropped.fetch_add(n);  // the file stopped earlier: these records have nowhere to go
  }
  b->committed.store(0, std::memory_order_release);
  ++b->flushes;
  b->busy.store(0);
}

void flush_all()
{
  int n = g_nbufs.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (g_bufs[i] != nullptr)
      flush(g_bufs[i]);
}

ThreadBuf* this_thread_buf()
{
  if (t_buf != nullptr)
    return t_buf;
  std::lock_guard<std::mutex> lock(g_open_mutex);
  int index = g_next_thread.fetch_add(1);
  if (index >= kMaxThreads)
    return nullptr;  // more threads than slots: this thread is not recorded
  auto* b = new ThreadBuf;  // never freed: a signal handler may flush it after the thread ended
  b->index = index;
  char path[4200];
  rank_path(path, sizeof path, ".gcraw", index);
  b->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (b->fd >= 0) {
    RawHeader h;
    h.rank = g_rank.load();
    h.thread = index;
    h.pid = getpid();
    ssize_t w = write(b->fd, &h, sizeof h);
    if (w == static_cast<ssize_t>(sizeof h))
      b->file_bytes = sizeof h;
    else
      stop_file(b, w < 0 ? errno : ENOSPC);  // a header cut short: the file is unreadable, write no records
  }
  g_bufs[index] = b;
  g_nbufs.store(index + 1, std::memory_order_release);
  t_buf = b;
  return b;
}

/// Appends one record; flushes first when the buffer is full.
void push(ThreadBuf* b, const RawRecord& r)
{
  stop_poll_sampling();
  std::size_t n = b->committed.load(std::memory_order_relaxed);
  if (n == kBufferRecords) {
    flush(b);
    n = b->committed.load(std::memory_order_relaxed);
    if (n == kBufferRecords)
      return;  // could not flush (a signal handler holds it): drop rather than overwrite
  }
  b->records[n].r = r;
  ++b->appended;
  b->committed.store(n + 1, std::memory_order_release);
}

// ------------------------------------------------------------------ ends of the run

void on_signal(int sig, siginfo_t* info, void* context)
{
  if (g_initialized.load() && not g_ended.exchange(true)) {
    g_recording.store(false);
    flush_all();
    write_meta("signal", now_ticks(), sig);
  }
  // Chain to the handler that was there before us, or die of the signal as the application would have.
  const struct sigaction& old = sig == SIGTERM ? g_old_term : g_old_int;
  gridcast::chain_signal(old, sig, info, context);
}

void install_signal_handlers()
{
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGINT, &sa, &g_old_int);
}

/// A child of fork() (a helper the application starts) copies the rank's buffers and state, not its rank:
/// it must neither record nor, at its exit or on a signal, write the parent's records or meta file again
/// (the copies would be appended to the rank's raw file a second time).
void in_forked_child()
{
  g_recording.store(false);
  g_ended.store(true);
}

void at_exit()
{
  // Only a process that initialised MPI owns its rank's files: a child the application started
  // (system(), popen()) inherits the environment and the hook, and must not touch them.
  if (not g_initialized.load() || g_ended.exchange(true))
    return;
  g_recording.store(false);
  flush_all();
  write_meta("exit-without-finalize", now_ticks(), 0);
}

// ------------------------------------------------------------------ function list

void load_function_list(const char* path)
{
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) {
    std::fprintf(stderr, "gridcast-hook: cannot read function list %s: %s\n", path, std::strerror(errno));
    return;
  }
  g_have_list = true;
  g_list = new std::unordered_set<std::string>;
  char line[1024];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::string_view s(line);
    while (not s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
      s.remove_suffix(1);
    while (not s.empty() && (s.front() == ' ' || s.front() == '\t'))
      s.remove_prefix(1);
    if (s.empty() || s.front() == '#')
      continue;
    // A discover list line is "name<TAB>seconds<TAB>share": the name is the first field.
    auto tab = s.find_first_of(" \t");
    if (tab != std::string_view::npos)
      s = s.substr(0, tab);
    g_list->emplace(s);
  }
  std::fclose(f);
}

__attribute__((constructor)) void hook_load()
{
  const char* dir = std::getenv("GRIDCAST_HOOK_DIR");
  if (dir == nullptr || *dir == 0)
    return;  // loaded but not asked to record: behave as if absent
  std::strncpy(g_dir, dir, sizeof g_dir - 1);
  g_config.enabled = true;
#if defined(__x86_64__) && not GRIDCAST_HOOK_SMPI
  // Invariant TSC (CPUID 0x80000007, EDX bit 8): constant rate, not stopped in idle states.
  unsigned a = 0, b = 0, c = 0, d = 0;
  const char* clock = std::getenv("GRIDCAST_HOOK_CLOCK");
  bool forced_ns = clock != nullptr && std::strcmp(clock, "ns") == 0;
  if (not forced_ns && __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)) != 0)
    g_tsc_clock = true;
#endif
  // The start of the clock calibration (on_init): both clocks read together, now.
  g_cal_ns = clock_ns();
  g_cal_ticks = now_ticks();
  const char* disc = std::getenv("GRIDCAST_HOOK_DISCOVER");
  g_config.discover = disc != nullptr && std::strcmp(disc, "1") == 0;
  if (const char* list = std::getenv("GRIDCAST_HOOK_FUNCTIONS"); list != nullptr && *list != 0)
    load_function_list(list);
  for (int i = 0; i < static_cast<int>(Fn::Count); ++i) {
    std::string_view family = kFnFamilies[i];
    bool library = std::string_view(kFnNames[i]).substr(0, 4) != "MPI_";
    // MPI is always recorded; libraries unless a list leaves them out (GPU calls are always kept:
    // they are the GPU's share of the run, not a choice of functions).
    bool gpu = family.substr(0, 4) == "gpu_" || std::string_view(kFnNames[i]).substr(0, 4) == "nccl" ||
               std::string_view(kFnNames[i]).substr(0, 4) == "cuda";
    g_selected[i] = not library || gpu || not g_have_list || g_list->count(kFnNames[i]) > 0;
  }
  // Open MPI sets the rank in the environment before MPI_Init: records can name their file early.
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(var); v != nullptr && *v != 0) {
      g_rank.store(std::atoi(v));
      break;
    }
  std::atexit(at_exit);
  pthread_atfork(nullptr, nullptr, in_forked_child);
}

// ------------------------------------------------------------------ application function names

struct Symbol {
  std::uintptr_t address;
  std::uintptr_t size;
  std::string name;
};

/// FUNC symbols of one ELF file (its .symtab, else .dynsym), sorted by address.
std::vector<Symbol> read_elf_functions(const char* file)
{
  std::vector<Symbol> out;
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    close(fd);
    return out;
  }
  void* map = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED)
    return out;
  const auto* base = static_cast<const unsigned char*>(map);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  auto size = static_cast<std::size_t>(st.st_size);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      eh->e_shoff + static_cast<std::size_t>(eh->e_shnum) * sizeof(Elf64_Shdr) <= size) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    for (std::uint32_t want : {static_cast<std::uint32_t>(SHT_SYMTAB), static_cast<std::uint32_t>(SHT_DYNSYM)}) {
      for (int i = 0; i < eh->e_shnum && out.empty(); ++i) {
        if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum)
          continue;
        const auto& strs = sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > size || strs.sh_offset + strs.sh_size > size)
          continue;
        const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
        std::size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
        for (std::size_t k = 0; k < count; ++k)
          if (ELF64_ST_TYPE(syms[k].st_info) == STT_FUNC && syms[k].st_value != 0 &&
              syms[k].st_name < strs.sh_size)
            out.push_back({syms[k].st_value, syms[k].st_size,
                           reinterpret_cast<const char*>(base + strs.sh_offset + syms[k].st_name)});
      }
      if (not out.empty())
        break;
    }
  }
  munmap(map, size);
  std::sort(out.begin(), out.end(), [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  return out;
}

struct Module {
  std::uintptr_t bias;
  std::vector<Symbol> functions;
};

std::mutex g_names_mutex;
std::unordered_map<std::string, Module>* g_modules = nullptr;
std::unordered_map<std::uintptr_t, std::uint16_t>* g_app_ids = nullptr;  // address -> id (0 = not selected)
std::vector<std::string>* g_app_names = nullptr;                         // id - kFirstDynamicFn -> name

/// Name of the function at `address` (empty if unknown), from the ELF symbol table of its module.
std::string function_name(void* address)
{
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr)
    return {};
  if (info.dli_sname != nullptr && info.dli_saddr == address)
    return info.dli_sname;
  if (g_modules == nullptr)
    g_modules = new std::unordered_map<std::string, Module>;
  auto it = g_modules->find(info.dli_fname);
  if (it == g_modules->end()) {
    // The main program's dli_fname may be empty or its argv[0]: read it through /proc/self/exe.
    const char* file = (info.dli_fname[0] == 0) ? "/proc/self/exe" : info.dli_fname;
    Module m;
    m.functions = read_elf_functions(file);
    if (m.functions.empty() && file != std::string_view("/proc/self/exe"))
      m.functions = read_elf_functions("/proc/self/exe");
    // Position-independent modules are loaded at dli_fbase; fixed executables at their link address.
    const auto* eh = static_cast<const Elf64_Ehdr*>(info.dli_fbase);
    m.bias = eh->e_type == ET_DYN ? reinterpret_cast<std::uintptr_t>(info.dli_fbase) : 0;
    it = g_modules->emplace(info.dli_fname, std::move(m)).first;
  }
  auto a = reinterpret_cast<std::uintptr_t>(address) - it->second.bias;
  const auto& fs = it->second.functions;
  auto pos = std::upper_bound(fs.begin(), fs.end(), a, [](std::uintptr_t v, const Symbol& s) { return v < s.address; });
  if (pos == fs.begin())
    return {};
  --pos;
  if (pos->address == a || a < pos->address + pos->size)
    return pos->name;
  return {};
}

thread_local std::unordered_map<std::uintptr_t, std::uint16_t>* t_app_ids = nullptr;
thread_local bool t_in_app_lookup = false;

}  // namespace

// ------------------------------------------------------------------ public

bool g_tsc_clock = false;

const Config& config() { return g_config; }
std::atomic<bool> g_recording{false};
thread_local constinit int t_depth = 0;
thread_local constinit PollState t_poll;
thread_local constinit PollState t_poll_before;
bool selected(Fn fn) { return g_selected[static_cast<int>(fn)]; }

void append(const RawRecord& r)
{
  ThreadBuf* b = this_thread_buf();
  if (b != nullptr)
    push(b, r);
}

void append_with_values(RawRecord& call, ExtraKind kind, const std::int64_t* a, std::size_t na,
                        const std::int64_t* b, std::size_t nb)
{
  ThreadBuf* buf = this_thread_buf();
  if (buf == nullptr)
    return;
  std::size_t n = na + nb;
  // Low byte: what the values are; the rest: how many (the last continuation record is zero-padded).
  call.extra_kind = static_cast<std::int32_t>(kind) | static_cast<std::int32_t>(n << 8);
  call.n_extra = static_cast<std::uint32_t>((n + kValuesPerExtra - 1) / kValuesPerExtra);
  // A call and its continuation records go into the buffer together, so that a flush never splits them.
  if (buf->committed.load(std::memory_order_relaxed) + 1 + call.n_extra > kBufferRecords)
    flush(buf);
  t_last_call_index = buf->committed.load(std::memory_order_relaxed);
  t_last_call_appended_before = buf->appended;
  push(buf, call);
  std::size_t i = 0;
  while (i < n) {
    RawRecord extra;
    extra.kind = Kind::Extra;
    auto* values = reinterpret_cast<std::int64_t*>(&extra);
    // The whole 96 bytes carry values: the converter knows a record is an Extra from its position.
    for (int k = 0; k < kValuesPerExtra; ++k, ++i)
      values[k] = i < n ? (i < na ? a[i] : b[i - na]) : 0;
    push(buf, extra);
  }
}

namespace {

/// The failed-poll state a call of (fn, key) would fold into, or nullptr (see fold_poll).
PollState* fold_target(const ThreadBuf* b, std::uint16_t fn, std::uint64_t key)
{
  PollState& p = t_poll;
  if (b == nullptr || not p.valid || p.appended != b->appended || p.flushes != b->flushes)
    return nullptr;  // something was recorded since the last failed poll
  if (p.fn == fn && p.key == key)
    return &p;  // the same poll again
  // A cycle of two: A B A B... -- this call repeats the poll before the last one (A), and A has been
  // repeated as often as B so far. A is marked: the converter writes the two back interleaved.
  PollState& q = t_poll_before;
  if (not q.valid || q.fn != fn || q.key != key || q.flushes != b->flushes)
    return nullptr;
  if (b->records[q.index].r.repeat != b->records[p.index].r.repeat)
    return nullptr;
  return &q;
}

}  // namespace

std::int64_t untimed_poll_start(std::uint16_t fn, std::uint64_t key, std::int64_t end)
{
  const ThreadBuf* b = t_buf;
  const PollState* s = fold_target(b, fn, key);
  if (s == nullptr)
    return end;  // the run was flushed meanwhile (a signal): no estimate, a zero duration
  const RawRecord& r = b->records[s->index].r;
  std::int64_t timed_calls = std::max<std::int64_t>(1, r.repeat + 1 - s->untimed);
  std::int64_t mean_busy = r.busy_ticks / timed_calls;
  return std::max(r.start_ticks + r.duration_ticks, end - mean_busy);
}

bool fold_poll(std::uint16_t fn, std::uint64_t key, bool timed, std::int64_t start, std::int64_t end)
{
  ThreadBuf* b = t_buf;
  PollState* s = fold_target(b, fn, key);
  if (s == nullptr)
    return false;
  RawRecord& r = b->records[s->index].r;
  if (s != &t_poll)
    r.flags |= kFlagPollCycle;
  ++r.repeat;
  if (not timed) {
    ++s->untimed;
    --s->skip;
    return true;
  }
  // A timed call stands for itself and the untimed ones folded since the previous timed call
  // (systematic sampling): the busy time is an estimate, the call count is exact.
  r.busy_ticks += (end - start) * (1 + s->untimed);
  s->untimed = 0;
  r.duration_ticks = end - r.start_ticks;
  r.busy_ticks = std::min(r.busy_ticks, r.duration_ticks);
  if (r.repeat >= kPollTimedFolds)
    s->skip = kPollSampleEvery - 1;
  return true;
}

void remember_poll(std::uint16_t fn, std::uint64_t key)
{
  ThreadBuf* b = t_buf;
  if (b == nullptr)
    return;
  // The previous failed poll is "right before" this one when its record (and continuation records)
  // were the last thing appended before this call's record, in the same buffer.
  const bool adjacent = t_poll.valid && t_poll.appended == t_last_call_appended_before && t_poll.flushes == b->flushes;
  t_poll_before = adjacent ? t_poll : PollState{};
  t_poll = {true, fn, key, t_last_call_index, b->appended, b->flushes, 0, 0, &b->records[t_last_call_index].r};
}

void on_init(int world_rank, int world_size, std::int64_t init_start_ticks, const char* mpi_library)
{
  if (not g_config.enabled)
    return;
  std::size_t n = 0;
  for (; mpi_library != nullptr && mpi_library[n] != '\0' && mpi_library[n] != '\n' && mpi_library[n] != '\r' &&
         n + 1 < sizeof g_mpi_library;
       ++n)
    g_mpi_library[n] = mpi_library[n];
  g_mpi_library[n] = '\0';
  g_rank.store(world_rank);
  g_size = world_size;
  g_init_ns = init_start_ticks;
  g_init_rss_bytes = resident_bytes_now();
  if (g_tsc_clock) {
    // Ticks per second over the time since the hook was loaded (the start-up and MPI_Init: tens to
    // hundreds of ms, already spent), so no busy wait is needed; only when that was under 2 ms does it
    // wait for the rest. Refined over the whole run when it ends.
    std::int64_t ns = clock_ns(), ticks = now_ticks();
    while (ns - g_cal_ns < 2000000) {
      ns = clock_ns();
      ticks = now_ticks();
    }
    g_ticks_per_s = static_cast<std::int64_t>(static_cast<double>(ticks - g_cal_ticks) * 1e9 /
                                              static_cast<double>(ns - g_cal_ns));
  }
  g_initialized.store(true);
  this_thread_buf();  // the thread that called MPI_Init is thread 0 (unless a library call came first)
  write_meta("running", 0, 0);
  install_signal_handlers();
  g_recording.store(true);
}

namespace {

/// The end of the recording, once (finalize or abort, whichever comes first): every buffer written, and
/// the meta file saying how the run ended.
void end_recording(const char* status, std::int64_t end_ticks, int code)
{
  if (not g_config.enabled || not g_initialized.load())
    return;
  g_recording.store(false);
  if (g_ended.exchange(true))
    return;
  flush_all();
  write_meta(status, end_ticks, code);
}

}  // namespace

void on_finalize(std::int64_t end_ticks) { end_recording("finalized", end_ticks, 0); }

void on_abort(int code) { end_recording("abort", now_ticks(), code); }

void* next_symbol(const char* name)
{
  void* p = dlsym(RTLD_NEXT, name);
  return p;
}

std::uint16_t app_function_id(void* address)
{
  if (t_in_app_lookup)
    return 0;
  if (t_app_ids == nullptr) {
    t_in_app_lookup = true;
    t_app_ids = new std::unordered_map<std::uintptr_t, std::uint16_t>;
    t_in_app_lookup = false;
  }
  auto key = reinterpret_cast<std::uintptr_t>(address);
  if (auto it = t_app_ids->find(key); it != t_app_ids->end())
    return it->second;
  t_in_app_lookup = true;
  std::uint16_t id = 0;
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    if (g_app_ids == nullptr) {
      g_app_ids = new std::unordered_map<std::uintptr_t, std::uint16_t>;
      g_app_names = new std::vector<std::string>;
    }
    if (auto it = g_app_ids->find(key); it != g_app_ids->end()) {
      id = it->second;
    } else {
      std::string name = function_name(address);
      bool keep = not name.empty() && (g_config.discover || (g_have_list && g_list->count(name) > 0));
      if (keep && g_app_names->size() < 65535u - kFirstDynamicFn) {
        id = static_cast<std::uint16_t>(kFirstDynamicFn + g_app_names->size());
        g_app_names->push_back(name);
      }
      g_app_ids->emplace(key, id);
    }
  }
  t_app_ids->emplace(key, id);
  t_in_app_lookup = false;
  return id;
}

namespace {

/// Writes the Def record of dynamic function `id` (its name) into this thread's file, once per thread.
void define_in_thread(ThreadBuf* b, std::uint16_t id)
{
  std::size_t index = id - kFirstDynamicFn;
  if (index < b->defined.size() && b->defined[index])
    return;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    name = (*g_app_names)[index];
  }
  if (index >= b->defined.size())
    b->defined.resize(index + 1, false);
  b->defined[index] = true;
  RawRecord def;
  def.kind = Kind::Def;
  def.fn = id;
  def.bytes = name.size();
  std::vector<std::int64_t> packed((name.size() + 7) / 8, 0);
  std::memcpy(packed.data(), name.data(), name.size());
  append_with_values(def, ExtraKind::None, packed.data(), packed.size());
}

std::unordered_map<std::uintptr_t, std::uint16_t>* g_kernel_ids = nullptr;  // kernel handle -> id (0 = no name)

/// A kernel's name: what the CUDA runtime says (cudaFuncGetName, CUDA 12.3 and later, looked up at run
/// time), else the symbol of its host stub in the ELF symbol tables (the handle is the stub's address).
std::string kernel_name(const void* handle)
{
  using FuncGetName = int (*)(const char**, const void*);
  static const auto get_name = reinterpret_cast<FuncGetName>(dlsym(RTLD_DEFAULT, "cudaFuncGetName"));
  const char* name = nullptr;
  if (get_name != nullptr && get_name(&name, handle) == 0 && name != nullptr && name[0] != '\0')
    return name;
  return function_name(const_cast<void*>(handle));
}

}  // namespace

std::uint16_t kernel_function_id(const void* handle)
{
  if (not recording() || not g_config.enabled)
    return 0;
  ThreadBuf* b = this_thread_buf();
  if (b == nullptr)
    return 0;
  std::uint16_t id = 0;
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    if (g_app_names == nullptr) {
      g_app_ids = new std::unordered_map<std::uintptr_t, std::uint16_t>;
      g_app_names = new std::vector<std::string>;
    }
    if (g_kernel_ids == nullptr)
      g_kernel_ids = new std::unordered_map<std::uintptr_t, std::uint16_t>;
    auto key = reinterpret_cast<std::uintptr_t>(handle);
    if (auto it = g_kernel_ids->find(key); it != g_kernel_ids->end()) {
      id = it->second;
    } else {
      std::string name = kernel_name(handle);
      if (not name.empty() && g_app_names->size() < 65535u - kFirstDynamicFn) {
        id = static_cast<std::uint16_t>(kFirstDynamicFn + g_app_names->size());
        g_app_names->push_back(name);
      }
      g_kernel_ids->emplace(key, id);
    }
  }
  if (id != 0)
    define_in_thread(b, id);
  return id;
}

/// Records an application function's entry or exit; defines its name in this thread's file first.
void app_event(void* address, Kind kind)
{
  if (not recording() || not g_config.enabled)
    return;
  std::uint16_t id = app_function_id(address);
  if (id == 0)
    return;
  ThreadBuf* b = this_thread_buf();
  if (b == nullptr)
    return;
  define_in_thread(b, id);
  RawRecord r;
  r.kind = kind;
  r.fn = id;
  r.start_ticks = now_ticks();
  push(b, r);
}

}  // namespace gridcast::hook

// -finstrument-functions calls these around every function of an instrumented program.
extern "C" {
__attribute__((no_instrument_function, visibility("default"))) void __cyg_profile_func_enter(void* fn, void*)
{
  gridcast::hook::app_event(fn, gridcast::hook::Kind::Enter);
}
__attribute__((no_instrument_function, visibility("default"))) void __cyg_profile_func_exit(void* fn, void*)
{
  gridcast::hook::app_event(fn, gridcast::hook::Kind::Exit);
}
}
