// Reader for SimGrid SMPI time-independent traces (TIT), SimGrid 3.32 syntax, as written by
// `smpirun -trace-ti`: either an index file listing one trace file per rank (paths relative to the
// index), or a single file holding the lines of all ranks ("<rank> <action> <args...>").
#pragma once

#include "gridcast/models/stream.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::models {

/// Byte size of SMPI datatype id `id` as written by -trace-ti (Datatype::encode). Throws InputError for
/// an unknown id.
std::uint64_t tit_datatype_size(int id);

class TitTrace final : public TraceSource {
public:
  /// Opens an index file or a single all-ranks trace file. A single file is split once into per-rank
  /// binary spill files under `scratch_dir` (a temporary directory when empty) so that each rank still
  /// streams lazily.
  explicit TitTrace(const std::filesystem::path& path, std::filesystem::path scratch_dir = {});
  ~TitTrace() override;
  TitTrace(const TitTrace&)            = delete;  // owns its scratch directory
  TitTrace& operator=(const TitTrace&) = delete;
  int rank_count() const override { return static_cast<int>(files_.size()); }
  CallStreamPtr open(int rank) const override;
  bool single_file() const { return single_file_; }
  /// Where a single file was split (empty for an index); removed by the destructor when it was a temporary.
  const std::filesystem::path& scratch_dir() const { return scratch_; }

private:
  std::filesystem::path path_;
  std::vector<std::filesystem::path> files_;
  bool single_file_ = false;
  std::filesystem::path scratch_;
  bool own_scratch_ = false;
};

/// The parser of one rank's TIT lines. It carries the state that lines depend on: request ids given to
/// isend/irecv (0, 1, 2... in order), the requests still pending (matched by wait/test/waitall), and the
/// default datatype (MPI_BYTE, or MPI_DOUBLE after an "init" line with an argument, as SMPI's replay does).
class TitLineParser {
public:
  /// `np`: number of ranks (v-collectives carry np counts, peers must be < np); `file`: for error messages.
  TitLineParser(int np, int rank, std::string file);
  ~TitLineParser();
  TitLineParser(TitLineParser&&) noexcept;
  TitLineParser& operator=(TitLineParser&&) noexcept;

  /// Parses one whole line ("<rank> <action> <args...>") into `out`. Returns false for lines that carry no
  /// call: blank lines, '#' comments and the ignored actions (location, testall, testany). Throws
  /// InputError (file, line, rank, reason) for a malformed line or a line of another rank.
  bool parse(std::string_view line, std::uint64_t line_no, CallRecord& out, FunctionTable& functions);

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
