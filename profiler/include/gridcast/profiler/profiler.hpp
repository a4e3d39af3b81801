// gridcast::profiler -- the driver side of `gridcast profile`: turns the raw per-thread files written by
// libgridcast-hook.so into a native profile directory, ranks functions for --discover, checks that an
// application is dynamically linked to MPI, and reads function lists. See docs/guides/profiling.md.
#pragma once

#include "gridcast/models/profile.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::profiler {

/// rank-R.meta, written by the hook at MPI_Init and at the end of the run.
struct RawMeta {
  int rank = -1;
  int size = 0;
  std::int64_t pid = 0;
  std::string host;
  std::int64_t init_ticks = 0;  ///< clock ticks when MPI_Init was entered
  std::int64_t end_ticks = 0;   ///< when MPI_Finalize was entered (or the run ended); 0 while running
  std::int64_t ticks_per_s = 0;  ///< clock rate of the timestamps (TSC ticks, or 1e9 for ns)
  int threads = 0;
  std::string status;        ///< running, finalized, abort, signal, exit-without-finalize
  int code = 0;              ///< signal number or abort code
  std::int64_t init_rss_bytes = 0;  ///< resident set when MPI_Init returned; 0: not recorded
  std::int64_t peak_rss_bytes = 0;  ///< the process's peak resident set when the run ended; 0: not recorded
  std::string mpi_library;  ///< the first line of MPI_Get_library_version; empty: not recorded
  int write_errno = 0;              ///< why a raw file of the rank stopped growing (ENOSPC...); 0: it did not
  std::int64_t records_dropped = 0;  ///< records the hook could not write after that
};

RawMeta read_raw_meta(const std::filesystem::path& file);

/// What the conversion found for one rank.
struct RankSummary {
  int rank = 0;
  std::string status;          ///< from the meta file ("missing" when the rank left nothing, "damaged" when
                               ///< its meta file could not be read)
  std::string damage;          ///< why the meta file could not be read (status "damaged")
  double wall_s = 0;           ///< MPI_Init .. MPI_Finalize (or the last record when the run did not finish)
  double covered_s = 0;        ///< time covered by the records written (calls and compute bursts, overlaps once)
  double hooked_s = 0;         ///< time inside hooked functions (MPI, libraries, listed application functions)
  std::uint64_t records = 0;   ///< records written
  double last_record_s = 0;    ///< where the last record ends, from MPI_Init
  std::uint64_t raw_records = 0;
  std::string write_error;     ///< why the records stop early (the disk was full...); empty when they do not
  std::int64_t records_dropped = 0;  ///< records the hook could not write
  double coverage() const { return wall_s > 0 ? covered_s / wall_s : 0.0; }
};

/// Total time per function over all ranks (for --discover): calls' durations; application functions
/// their exclusive time; "compute" the time in no hooked function.
struct FunctionTotal {
  std::string name;
  double seconds = 0;
  std::uint64_t calls = 0;
};

struct ConvertResult {
  std::vector<RankSummary> ranks;
  std::vector<FunctionTotal> functions;  ///< sorted by decreasing time, then name
  bool all_finalized = false;
};

/// Converts the raw files of `raw_dir` into a profile directory `out` (created; rank files and run.json
/// written). `info` gives run.json's fields; np comes from the raw files and `complete` is and-ed with
/// "every rank reached MPI_Finalize". Deterministic: the same raw files and info give identical files.
/// An empty `out` converts without writing (discover).
/// A rank's records past `max_records_per_rank` are an InputError (a damaged count of folded polls; 10^10
/// records are ~200 GB of trace, more than any replay could use).
inline constexpr std::uint64_t kDefaultMaxRawRecords = 10'000'000'000;
ConvertResult convert_raw(const std::filesystem::path& raw_dir, models::RunInfo info,
                          const std::filesystem::path& out, std::uint64_t max_records_per_rank = kDefaultMaxRawRecords);

/// Functions covering at least `share` of the total time (greedy by decreasing time), excluding the
/// anonymous "compute" time.
std::vector<FunctionTotal> select_functions(const std::vector<FunctionTotal>& totals, double share);

/// Writes a function list: a comment header, then "name<TAB>seconds<TAB>share" per line.
void write_function_list(const std::filesystem::path& file, const std::vector<FunctionTotal>& selected,
                         double total_s, const std::string& command);

/// Reads a function list: '#' comments and blank lines skipped, one symbol name per line optionally
/// followed by numbers. A malformed line is an InputError naming the file and line.
std::vector<std::string> read_function_list(const std::filesystem::path& file);

/// One name of a function list and the line it is on (1-based), for error messages.
struct ListedFunction {
  std::string name;
  std::uint64_t line = 0;
};
/// read_function_list() with the line of each name.
std::vector<ListedFunction> read_function_list_entries(const std::filesystem::path& file);

/// What a function list names, checked against the application before the run.
struct FunctionListCheck {
  std::vector<std::string> application;  ///< names defined by the application itself (need -finstrument-functions)
  std::vector<std::string> libraries;    ///< names exported only by a library it needs, not wrapped by the hook
};
/// Checks every name of the list `file`: a function the hook wraps (MPI, BLAS/LAPACK, CUDA, NCCL), a function
/// of `app`'s symbol tables, or one exported by a shared library `app` needs (directly or not). The first
/// name that is none of them is an InputError naming the file, its line and the symbol (and how many more
/// there are). A name may carry a symbol version (`name@VERSION`): the part before '@' is looked up.
FunctionListCheck check_function_list(const std::filesystem::path& file, const std::filesystem::path& app);

/// The names the hook can record by itself (MPI, BLAS/LAPACK, CUDA, NCCL).
bool is_builtin_function(const std::string& name);

/// FUNC symbols defined in an ELF file (.symtab, else .dynsym); empty if it is not ELF.
std::vector<std::string> elf_function_names(const std::filesystem::path& file);

/// FUNC/IFUNC symbols an ELF shared library exports (its .dynsym, defined, not local); empty if not ELF.
std::vector<std::string> elf_exported_functions(const std::filesystem::path& file);

/// The shared libraries `app` needs, directly or through each other (DT_NEEDED, breadth first, each once),
/// found as the dynamic linker would (LD_LIBRARY_PATH, RUNPATH/RPATH with $ORIGIN, system directories);
/// libraries that cannot be found are left out.
std::vector<std::filesystem::path> needed_libraries(const std::filesystem::path& app);

/// Whether an ELF file imports `symbol` (an undefined dynamic symbol), e.g. __cyg_profile_func_enter
/// in a program built with -finstrument-functions.
bool elf_imports(const std::filesystem::path& file, const std::string& symbol);

/// The application in a launch command: the first argument after the launcher (mpirun/mpiexec/srun) and
/// its options, resolved through PATH. nullopt when the command has no such argument.
std::optional<std::filesystem::path> find_application(const std::vector<std::string>& command);

/// Whether the ELF executable `app` is dynamically linked to an MPI library (libmpi*), directly or
/// through the libraries it needs. Throws InputError when `app` is not an ELF file.
bool links_mpi_dynamically(const std::filesystem::path& app);


}  // namespace gridcast::profiler
