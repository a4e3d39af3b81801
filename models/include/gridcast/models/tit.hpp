// Reader for SimGrid SMPI time-independent traces (TIT), SimGrid 3.32 syntax, in every layout
// `smpirun -replay` reads: an index file listing one trace file per rank, an index of one line naming a
// file shared by all ranks (what `-trace-ti` writes with tracing/smpi/format/ti-one-file:yes), or that
// shared file itself ("<rank> <action> <args...>" lines of every rank).
#pragma once

#include "gridcast/models/stream.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::models {

/// Byte size of SMPI datatype id `id` as written by -trace-ti (Datatype::encode). Throws InputError for
/// an unknown id.
std::uint64_t tit_datatype_size(int id);

/// SMPI settings that change what a TIT trace's lines cost, applied while reading as smpirun's replay
/// applies them (docs/reference/cfg.md).
struct TitReadOptions {
  /// smpi/comp-adjustment-file: speedup per call location ("prevfile:prevline:file:line", built from the
  /// trace's `location` lines); `compute` flops and `sleep` seconds are divided by it. Empty: none.
  std::map<std::string, double, std::less<>> speedup_by_location;
  /// smpi/trace-call-use-absolute-path: keys name the location's file as written, not its base name.
  bool absolute_location_paths = false;
};

/// Reads an smpi/comp-adjustment-file (a CSV header line, then "location,speedup" lines) into `out`.
/// Throws InputError naming the file and line.
void read_comp_adjustment_file(const std::filesystem::path& file, TitReadOptions& out);

/// What the relative paths of an index were resolved against (docs/reference/tit.md, "Layouts").
enum class TitPathBase : std::uint8_t {
  None,              ///< no relative path (a single file, or an index of absolute paths)
  IndexFolder,       ///< the folder of the index file (gridcast's first choice)
  WorkingDirectory,  ///< the working directory, as smpirun opens them (when not found beside the index)
};

/// "index folder", "working directory" (empty for None), for reports.
std::string_view tit_path_base_name(TitPathBase base);

class TitTrace final : public TraceSource {
public:
  /// Opens an index file, a one-line index naming a shared all-ranks file, or that single file. A single
  /// file is split once into per-rank binary spill files under `scratch_dir` (a temporary directory when
  /// empty) so that each rank still streams lazily. A relative index entry is looked for beside the index,
  /// then in the working directory; one found in both places as two different files is an error.
  explicit TitTrace(const std::filesystem::path& path, std::filesystem::path scratch_dir = {},
                    TitReadOptions read_options = {});
  ~TitTrace() override;
  TitTrace(const TitTrace&)            = delete;  // owns its scratch directory
  TitTrace& operator=(const TitTrace&) = delete;
  int rank_count() const override { return static_cast<int>(files_.size()); }
  CallStreamPtr open(int rank) const override;
  /// True when all ranks read one shared file (given directly or by a one-line index).
  bool single_file() const { return single_file_; }
  /// Where a single file was split (empty for an index); removed by the destructor when it was a temporary.
  const std::filesystem::path& scratch_dir() const { return scratch_; }
  /// Every file the trace reads, in order: the path given, then the files its index names.
  const std::vector<std::filesystem::path>& input_files() const { return inputs_; }
  /// What the index's relative entries were resolved against (WorkingDirectory if any one was).
  TitPathBase path_base() const { return path_base_; }

private:
  void split_single_file(const std::filesystem::path& file, std::filesystem::path scratch_dir);
  std::filesystem::path resolve_entry(const std::filesystem::path& entry, std::uint64_t line_no, int rank);

  std::filesystem::path path_;
  std::filesystem::path data_path_;  ///< the shared file of a single-file trace
  std::vector<std::filesystem::path> files_;
  std::vector<std::filesystem::path> inputs_;
  TitPathBase path_base_ = TitPathBase::None;
  bool single_file_ = false;
  std::filesystem::path scratch_;
  bool own_scratch_ = false;
  std::shared_ptr<const TitReadOptions> read_options_;
};

/// The parser of one rank's TIT lines. It carries the state that lines depend on: request ids given to
/// isend/irecv (0, 1, 2... in order), the requests still pending (matched by wait/test/waitall), and the
/// default datatype (MPI_BYTE, or MPI_DOUBLE after an "init" line with an argument, as SMPI's replay does).
class TitLineParser {
public:
  /// `np`: number of ranks (v-collectives carry np counts, peers must be < np); `file`: for error messages;
  /// `options`: settings applied while reading (none when null).
  TitLineParser(int np, int rank, std::string file, std::shared_ptr<const TitReadOptions> options = {});
  ~TitLineParser();
  TitLineParser(TitLineParser&&) noexcept;
  TitLineParser& operator=(TitLineParser&&) noexcept;

  /// Parses one whole line ("<rank> <action> <args...>") into `out`. Returns false for lines that carry no
  /// call: blank lines, '#' comments and the ignored actions (location, testall, testany). Throws
  /// InputError (file, line, rank, reason) for a malformed line or a line of another rank (unless
  /// skip_other_ranks()).
  bool parse(std::string_view line, std::uint64_t line_no, CallRecord& out, FunctionTable& functions);

  /// Lines of other ranks are skipped instead of refused, as smpirun's replay does with the file of one
  /// rank (it warns "Ignore trace element not for me"): a file listed for several ranks is then read by
  /// each for its own lines.
  void skip_other_ranks();
  /// Lines of this rank parsed so far (calls or not), and lines of other ranks skipped.
  std::uint64_t own_lines() const;
  std::uint64_t skipped_lines() const;

  int np() const;
  int rank() const;
  /// Requests posted and not yet waited for, in posting order.
  std::vector<std::int64_t> pending_requests() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Parses one TIT line of rank `rank` ("<rank> <action> <args...>") into `out` with a fresh TitLineParser.
/// `np` is the number of ranks (v-collectives carry np counts). A line without a call leaves `out` cleared.
/// wait/test need the isend/irecv of earlier lines: use TitLineParser for whole streams. Exposed for tests.
void parse_tit_line(std::string_view line, int np, CallRecord& out, FunctionTable& functions,
                    const std::string& file, std::uint64_t line_no, int rank);

/// The tag SMPI 3.32's time-independent trace gives the wait or test of a nonblocking collective of `op`
/// ("wait S S TAG"), or 0 for an op that has no nonblocking form in TIT traces.
std::int32_t tit_nbc_tag(Op op);

/// True when the file looks like a trace (first token is a rank) rather than an index (a path).
bool tit_is_single_file(const std::filesystem::path& path);

}  // namespace gridcast::models
