// A study: one model (or trace) predicted over a sweep of settings and platform variants
// (docs/guides/studies.md). The study file is read strictly, expanded into its points before anything
// runs, and every point is checked then: a bad key, an empty axis or a platform that cannot hold the
// ranks stops the study with the key and the point named, never half-way through a sweep.
// Part of gridcast::study (no SimGrid engine runs here: points run as child processes, runner.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::study {

/// What each point runs: `gridcast predict` on a model, or `gridcast replay` of a trace.
enum class Command { Predict, Replay };

/// A setting by its key ("np", "cfg.network/model", "spec.network.link.bandwidth") and its JSON value.
using Setting = std::pair<std::string, nlohmann::json>;

/// One axis of the grid: a key and its values, in the file's order.
struct Axis {
  std::string key;
  std::vector<nlohmann::json> values;
};

/// A named set of settings crossed with every point of the grid ("a platform variant"). The first
/// variant is the base the report compares the others with.
struct Variant {
  std::string name;
  std::vector<Setting> set;
};

/// The study file, as read (paths made absolute against the study file's folder).
struct StudyFile {
  std::filesystem::path file;
  std::string name;
  Command command = Command::Predict;
  std::filesystem::path input;          ///< model.json (predict) or the trace (replay)
  std::filesystem::path platform_spec;  ///< a platform spec (gridcast platform), or
  std::filesystem::path platform_xml;   ///< a fixed SimGrid platform
  std::filesystem::path calibration;    ///< with a spec: fills what it leaves out (optional)
  std::vector<Setting> base;            ///< settings of every point
  std::vector<Axis> axes;               ///< the grid (the first axis varies slowest)
  std::vector<Variant> variants;        ///< crossed with the grid; none: one unnamed variant
  /// How the report's efficiency reads: "strong" (the work is fixed: T(np0) np0 / (T(np) np)) or "weak"
  /// (the work grows with np: T(np0) / T(np)).
  std::string scaling = "strong";
  /// What the report's change plot compares: each point against the point that differs only in
  /// `compare_key` (an axis, or "variant"), where that key has the value `compare_base`. Empty: no such
  /// plot (no variants and no `compare`).
  std::string compare_key, compare_base;
};

/// Reads and checks a study file. Errors (InputError) name the file and the key path. The model or trace
/// path (`predict`, `replay` or the `input` setting) may name settings in braces, "traces/{tag.app}-{np}",
/// each replaced by the point's value.
StudyFile read_study(const std::filesystem::path& file);

/// A point's settings once the base, its variant and its grid coordinates are applied.
struct Settings {
  int np = 0;
  std::optional<double> nw;  ///< predict only
  int ranks_per_node = 1;
  std::uint64_t seed = 0;
  std::string gpu_mpi;       ///< replay only; empty: the default
  std::string fast_forward;  ///< predict only; empty: the default
  std::vector<std::pair<std::string, std::string>> cfg;  ///< --cfg name:value, sorted by name
  /// tag.<name>: a label of the point (in its id, the CSV and the plots), and a value for the {tag.name}
  /// of a path template; nothing else reads it.
  std::vector<std::pair<std::string, std::string>> tags;
};

/// One run of the study.
struct Point {
  std::size_t index = 0;             ///< in the manifest's order (the Slurm array index)
  std::string variant;               ///< empty without variants
  std::vector<Setting> coordinates;  ///< the grid's axis key -> value
  Settings settings;
  nlohmann::json spec;               ///< the platform spec with the point's changes (null: a fixed XML)
  std::string platform_id;           ///< digest of the platform's inputs: points that share it share the XML
  std::string id;                    ///< digest of every input of the point (12 hex digits)
  std::string digest;                ///< the same, all 40 digits
  std::filesystem::path input;       ///< the model or trace this point runs
};

/// Every point of the study in manifest order (variants outermost, then the grid with its first axis
/// slowest), each checked: required settings present, values of the right type, the spec with the
/// point's changes valid, the platform's nodes enough for the ranks, no two points the same run.
/// The id is the digest of what the run depends on (the contents of the model or trace, platform spec,
/// calibration or XML, the settings, and the gridcast and SimGrid versions), not of paths: a study moved to
/// another machine with the same versions keeps its ids, and an upgrade runs its points again.
std::vector<Point> expand(const StudyFile& study);

/// The SHA-1 of the model or trace: a file, or every regular file under a directory in path order.
std::string digest_input(const std::filesystem::path& input);

/// The label of a point in messages and plots: "variant np=64 nw=32" (the variant, then the grid's values).
std::string point_label(const Point& point);

/// The text of a setting's value in labels, the CSV and --cfg ("25GBps", "64", "true").
std::string value_text(const nlohmann::json& value);

}  // namespace gridcast::study
