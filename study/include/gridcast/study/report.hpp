// report.html: one self-contained page (no script, no outside file) with the study's plots, drawn by
// gnuplot as SVG and inlined, and the table of every point (docs/guides/studies.md, "The report").
#pragma once

#include "gridcast/study/results.hpp"

#include <filesystem>
#include <optional>
#include <vector>

namespace gridcast::study {

/// Writes the report of `results` (manifest order; nullopt for a point without a result). The plots need
/// gnuplot on PATH: without it, an InputError says so (results.csv is written before).
void write_report(const Manifest& manifest, const std::vector<std::optional<PointResult>>& results,
                  const std::filesystem::path& file);

}  // namespace gridcast::study
