// TIT trace files: the layouts smpirun -replay reads (per-rank index, one-line index of a shared file,
// ti-one-file, a shared file given directly), path resolution, and the comp-adjustment file. The line
// syntax is tit.cpp's. docs/reference/tit.md, "Layouts".
#include "gridcast/models/tit.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"

#include "io.hpp"
#include "tit_requests.hpp"
#include "tit_syntax.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

namespace fs = std::filesystem;

namespace gridcast::models {

// ---------------------------------------------------------------- files

namespace {

/// One rank's trace file of an index, parsed while streaming. Lines of other ranks are skipped, as
/// smpirun's replay skips them, but a file with lines of other ranks only is refused: it is no trace of
/// this rank, and replaying nothing for it would be a wrong answer.
class TitTextStream final : public detail::TextTraceStream {
public:
  TitTextStream(const fs::path& file, int rank, int np, std::shared_ptr<const TitReadOptions> options)
      : TextTraceStream(file, rank, "TIT trace"), parser_(np, rank, source_, std::move(options))
  {
    parser_.skip_other_ranks();
  }
  bool next(CallRecord& out) override
  {
    std::string_view line;
    while (in_.next(line))
      if (parser_.parse(line, in_.line_no(), out, functions_))
        return true;
    if (parser_.own_lines() == 0 && parser_.skipped_lines() > 0)
      throw InputError({source_, 0, "", parser_.rank()},
                       "the trace file of rank " + std::to_string(parser_.rank()) + " holds " +
                           std::to_string(parser_.skipped_lines()) + " lines of other ranks and none of its own");
    return false;
  }
private:
  TitLineParser parser_;
};

std::string_view trim(std::string_view s)
{
  std::size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos)
    return {};
  std::size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

/// First token as a rank, for routing the lines of a single file.
bool leading_rank(std::string_view line, std::int64_t& rank)
{
  std::size_t b = line.find_first_not_of(" \t");
  std::size_t e = line.find_first_of(" \t", b);
  return tit_syntax::parse_integer(line.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b), rank);
}

fs::path make_temp_dir()
{
  std::string tmpl = (fs::temp_directory_path() / "gridcast-tit-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw InputError(detail::at_file(tmpl), "cannot create a scratch directory: " + std::string(std::strerror(errno)));
  return tmpl;
}

/// Per-rank state of the single-file splitter: a parser and an encoder into a buffer appended to the spill
/// file when full (open-append-close, so that thousands of ranks never hold thousands of descriptors).
struct Spill {
  Spill(int np, int rank, const std::string& source, fs::path spill_path,
        std::shared_ptr<const TitReadOptions> options)
      : parser(np, rank, source, std::move(options)), encoder(true), path(std::move(spill_path))
  {
    detail::BinaryEncoder::put_header(buffer);
  }
  void flush()
  {
    std::ofstream out(path, std::ios::binary | (started ? std::ios::app : std::ios::trunc));
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    out.close();
    if (not out)
      throw InputError(detail::at_file(path.string()),
                       "cannot write the spill file: " + std::string(std::strerror(errno)));
    started = true;
    buffer.clear();
  }
  TitLineParser parser;
  FunctionTable functions;
  detail::BinaryEncoder encoder;
  fs::path path;
  std::string buffer;
  bool started = false;
};

}  // namespace

bool tit_is_single_file(const fs::path& path)
{
  detail::LineReader in(path);
  if (not in.is_open())
    throw InputError(detail::at_file(path.string()), "cannot open: " + std::string(std::strerror(errno)));
  std::string_view line;
  std::vector<std::string_view> tok;
  while (in.next(line)) {
    tit_syntax::split_tokens(line, tok);
    if (tok.empty())
      continue;
    std::int64_t rank;
    return tok.size() >= 2 && tit_syntax::parse_integer(tok[0], rank) && tit_syntax::is_action_name(tok[1]);
  }
  return false;
}

std::string_view tit_path_base_name(TitPathBase base)
{
  switch (base) {
    case TitPathBase::IndexFolder: return "index folder";
    case TitPathBase::WorkingDirectory: return "working directory";
    case TitPathBase::None: break;
  }
  return "";
}

void read_comp_adjustment_file(const fs::path& file, TitReadOptions& out)
{
  detail::LineReader in(file);
  if (not in.is_open())
    throw InputError(detail::at_file(file.string()), "cannot open: " + std::string(std::strerror(errno)));
  std::string_view line;
  bool header = true;
  while (in.next(line)) {
    if (header) {  // SMPI skips the first line (a CSV header), whatever it holds
      header = false;
      continue;
    }
    if (trim(line).empty())
      continue;
    // "location,speedup" (SMPI reads the first two CSV fields and trims the location)
    const auto comma = line.find(',');
    if (comma == std::string_view::npos)
      throw InputError(detail::at_line(file.string(), in.line_no()), "expected \"location,speedup\"");
    const std::string_view key = trim(line.substr(0, comma));
    std::string_view value     = trim(line.substr(comma + 1));
    value                      = trim(value.substr(0, value.find(',')));
    double speedup             = 0;
    auto [p, ec]               = std::from_chars(value.data(), value.data() + value.size(), speedup);
    if (ec != std::errc() || p != value.data() + value.size() || not std::isfinite(speedup) || speedup <= 0)
      throw InputError(detail::at_line(file.string(), in.line_no()),
                       "speedup '" + std::string(value) + "' is not a number > 0");
    out.speedup_by_location.try_emplace(std::string(key), speedup);  // the first one wins, as in SMPI
  }
}

/// A relative entry is looked for beside the index first (gridcast writes indexes so, and moving a trace
/// folder keeps it readable), then in the working directory (smpirun opens entries as written, and
/// `-trace-ti` writes them relative to the directory it ran in). Found in both places as two different
/// files, it is ambiguous: refused rather than guessed.
fs::path TitTrace::resolve_entry(const fs::path& entry, std::uint64_t line_no, int rank)
{
  std::error_code ec;
  const std::string source = path_.string();
  if (entry.is_absolute()) {
    if (not fs::is_regular_file(entry, ec))
      throw InputError({source, line_no, "", rank},
                       "trace file '" + entry.string() + "' of rank " + std::to_string(rank) + " does not exist");
    return entry;
  }
  const fs::path beside = path_.parent_path() / entry;
  const bool in_folder  = fs::is_regular_file(beside, ec);
  const bool in_cwd     = fs::is_regular_file(entry, ec);
  if (in_folder && in_cwd && not fs::equivalent(beside, entry, ec))
    throw InputError({source, line_no, "", rank},
                     "trace file '" + entry.string() + "' of rank " + std::to_string(rank) +
                         " is ambiguous: it exists beside the index ('" + beside.string() +
                         "') and in the working directory, as two different files; give an absolute path, or run "
                         "from the folder the paths are relative to");
  if (in_folder) {
    if (path_base_ == TitPathBase::None)
      path_base_ = TitPathBase::IndexFolder;
    return beside;
  }
  if (in_cwd) {
    path_base_ = TitPathBase::WorkingDirectory;
    return entry;
  }
  throw InputError({source, line_no, "", rank},
                   "trace file '" + entry.string() + "' of rank " + std::to_string(rank) +
                       " does not exist (looked for beside the index, '" + beside.string() +
                       "', and in the working directory)");
}

TitTrace::TitTrace(const fs::path& path, fs::path scratch_dir, TitReadOptions read_options)
    : path_(path), read_options_(std::make_shared<const TitReadOptions>(std::move(read_options)))
{
  std::error_code ec;
  if (not fs::is_regular_file(path_, ec))
    throw InputError(detail::at_file(path_.string()), fs::exists(path_, ec) ? "not a regular file" : "no such file");
  inputs_.push_back(path_);
  if (tit_is_single_file(path_)) {
    split_single_file(path_, std::move(scratch_dir));
    return;
  }

  // An index, as smpirun reads it: one entry per non-blank line.
  detail::LineReader in(path_);
  std::string_view line;
  std::vector<std::uint64_t> line_of_entry;
  while (in.next(line)) {
    std::string_view entry = trim(line);
    if (entry.empty())
      continue;
    const int rank = static_cast<int>(files_.size());
    files_.push_back(resolve_entry(fs::path(entry), in.line_no(), rank));
    line_of_entry.push_back(in.line_no());
  }
  if (files_.empty())
    throw InputError(detail::at_file(path_.string()), "the index lists no trace file");
  inputs_.insert(inputs_.end(), files_.begin(), files_.end());
  if (files_.size() == 1) {
    // One entry: smpirun gives that file to every rank, each reading its own lines (what -trace-ti writes
    // with tracing/smpi/format/ti-one-file:yes; a one-rank trace reads the same either way).
    fs::path shared = std::move(files_.front());
    files_.clear();
    if (not tit_is_single_file(shared))
      throw InputError({path_.string(), line_of_entry.front(), "", -1},
                       "'" + shared.string() + "', the one file this index names, does not start with a TIT line "
                       "('<rank> <action> ...'): an index cannot name another index");
    split_single_file(shared, std::move(scratch_dir));
  }
}

/// Single file: learn the rank count first (a cheap scan of the first tokens, needed because v-collective
/// lines carry np counts), then split it in one parsing pass into per-rank binary spill files.
void TitTrace::split_single_file(const fs::path& file, fs::path scratch_dir)
{
  std::error_code ec;
  single_file_             = true;
  data_path_               = file;
  const std::string source = file.string();
  std::vector<std::uint64_t> lines_of_rank;
  {
    detail::LineReader in(file);
    std::string_view line;
    while (in.next(line)) {
      std::string_view t = trim(line);
      if (t.empty() || t.front() == '#')
        continue;
      std::int64_t rank;
      if (not leading_rank(t, rank) || rank < 0 || rank >= kMaxRanks)
        throw InputError(detail::at_line(source, in.line_no()),
                         "expected '<rank> <action> ...' with a rank in [0, " + std::to_string(kMaxRanks) + ")");
      if (static_cast<std::size_t>(rank) >= lines_of_rank.size())
        lines_of_rank.resize(static_cast<std::size_t>(rank) + 1, 0);
      ++lines_of_rank[static_cast<std::size_t>(rank)];
    }
  }
  const int np = static_cast<int>(lines_of_rank.size());
  for (int r = 0; r < np; ++r)
    if (lines_of_rank[r] == 0)
      throw InputError({source, 0, "", r}, "no line of rank " + std::to_string(r) + " although ranks up to " +
                                               std::to_string(np - 1) + " appear");
  if (np == 0)
    throw InputError(detail::at_file(source), "the trace holds no line");

  if (scratch_dir.empty()) {
    scratch_     = make_temp_dir();
    own_scratch_ = true;
  } else {
    scratch_ = std::move(scratch_dir);
    fs::create_directories(scratch_, ec);
    if (ec || not fs::is_directory(scratch_))
      throw InputError(detail::at_file(scratch_.string()),
                       "cannot create the scratch directory" + (ec ? ": " + ec.message() : ""));
  }

  try {
    const std::size_t flush_at =
        std::clamp<std::size_t>((64u << 20) / static_cast<std::size_t>(np), 4096, detail::kIoBufferSize);
    std::vector<Spill> spills;
    spills.reserve(static_cast<std::size_t>(np));
    for (int r = 0; r < np; ++r)
      spills.emplace_back(np, r, source, scratch_ / rank_file_name(r, TraceEncoding::Binary), read_options_);

    detail::LineReader in(file);
    std::string_view line;
    CallRecord record;
    while (in.next(line)) {
      std::string_view t = trim(line);
      if (t.empty() || t.front() == '#')
        continue;
      std::int64_t rank = 0;
      leading_rank(t, rank);  // validated by the scan
      Spill& s = spills[static_cast<std::size_t>(rank)];
      if (not s.parser.parse(line, in.line_no(), record, s.functions))
        continue;
      s.encoder.encode(record, s.functions, s.buffer);
      if (s.buffer.size() >= flush_at)
        s.flush();
    }
    for (auto& s : spills) {
      s.flush();
      files_.push_back(s.path);
    }
  } catch (...) {
    if (own_scratch_)
      fs::remove_all(scratch_, ec);
    throw;
  }
}

TitTrace::~TitTrace()
{
  if (own_scratch_) {
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }
}

CallStreamPtr TitTrace::open(int rank) const
{
  if (rank < 0 || rank >= rank_count())
    throw InternalError("TitTrace::open: rank " + std::to_string(rank) + " out of range [0, " +
                        std::to_string(rank_count()) + ")");
  if (single_file_)
    return std::make_unique<detail::BinaryTraceStream>(files_[rank], rank, data_path_.string());
  return std::make_unique<TitTextStream>(files_[rank], rank, rank_count(), read_options_);
}

}  // namespace gridcast::models
