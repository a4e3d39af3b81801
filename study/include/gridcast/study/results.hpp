// What a study writes into its output folder, and reads back to resume (docs/guides/studies.md):
//   DIR/manifest.json                  the points in order, the command line of each, the platforms
//   DIR/platforms/<platform id>/       spec.json (the spec with the point's changes) and platform.xml
//   DIR/points/<id>/result.json        one point's figures, or its error (written by the study, never by
//                                      the run: a run killed half-way leaves no result, so it runs again)
//   DIR/points/<id>/run/, log.txt      the run's own outputs and its console
//   DIR/results.csv, DIR/report.html   everything merged (collect)
// A local pool and Slurm array tasks write the same files, so a study can start on one and end on the other.
#pragma once

#include "gridcast/study/study.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::study {

/// One point as the manifest holds it: enough to run it without the study file.
struct ManifestPoint {
  std::size_t index = 0;
  std::string id, digest, variant, platform_id;
  std::vector<Setting> coordinates;
  int np = 0;                     ///< 0: unknown (a replay of a trace that is not a profile directory)
  std::vector<std::string> args;  ///< the gridcast command line without --out (args[0] is the command)
};

/// A platform the points share: generated once from spec.json (with the calibration), or a fixed XML.
struct ManifestPlatform {
  std::string id;
  std::filesystem::path spec;  ///< empty for a fixed XML
  std::filesystem::path xml;
  nlohmann::json spec_content;  ///< what write_manifest puts in `spec` (null once read back: it is on disk)
};

struct Manifest {
  std::string name;
  std::string command;               ///< "predict" or "replay"
  std::vector<std::string> axes;     ///< the grid's keys, in order
  std::vector<std::string> variants; ///< names, in order (the first is the base)
  std::filesystem::path calibration; ///< given to every platform generation (may be empty)
  std::string scaling = "strong";    ///< StudyFile::scaling
  std::string compare_key, compare_base;  ///< StudyFile::compare_key, compare_base
  std::vector<ManifestPoint> points;
  std::vector<ManifestPlatform> platforms;

  const ManifestPlatform& platform(const std::string& id) const;
};

/// The manifest of `points` in `out`: each point's command line, and where its platform goes (the spec
/// files are written by write_manifest).
Manifest make_manifest(const StudyFile& study, const std::vector<Point>& points, const std::filesystem::path& out);
/// Writes DIR/manifest.json and every platform's spec.json (whole files, never half-written).
void write_manifest(const Manifest& manifest, const std::filesystem::path& out);
/// Reads DIR/manifest.json (InputError naming it when it is missing or not one).
Manifest read_manifest(const std::filesystem::path& out);

std::filesystem::path point_dir(const std::filesystem::path& out, const std::string& id);

/// One point's outcome: the figures of its prediction.json, or why it has none.
struct PointResult {
  std::string id, digest;
  bool ok = false;
  std::string error;  ///< when not ok: the run's error message
  int exit_code = 0;
  double makespan_s = 0;
  int ranks = 0;
  double compute_s = 0, comm_s = 0, wait_s = 0;  ///< means over ranks
  std::uint64_t events = 0, messages = 0;
  double link_bytes = 0;  ///< summed over links (a message counts on every link it crosses)
  std::string busiest_link;
  double busiest_link_utilisation = 0;
  std::string collectives;   ///< "allreduce:ring x16 reduce:binomial x4"
  bool fast_forwarded = false;
};

/// The result of a run that exited 0 from its prediction.json.
PointResult result_from_prediction(const ManifestPoint& point, const std::filesystem::path& prediction);
/// The result of a run that failed: its exit code and the error lines of its console log.
PointResult failed_result(const ManifestPoint& point, int exit_code, const std::string& error);

void write_result(const std::filesystem::path& out, const ManifestPoint& point, const PointResult& result);
/// The point's result.json when it is whole and belongs to this point (same digest); nullopt when there
/// is none. A file that exists but does not read (cut short, edited, another point's) is reported in
/// `problem` and treated as absent, so that the point runs again.
std::optional<PointResult> read_result(const std::filesystem::path& out, const ManifestPoint& point,
                                       std::string* problem = nullptr);

/// Every point's result in manifest order (nullopt where there is none yet).
std::vector<std::optional<PointResult>> read_results(const std::filesystem::path& out, const Manifest& manifest,
                                                     std::vector<std::string>* problems = nullptr);

/// results.csv: one row per point (index, id, variant, axes, status, figures, error), RFC 4180 quoting.
std::string results_csv(const Manifest& manifest, const std::vector<std::optional<PointResult>>& results);

}  // namespace gridcast::study
