// The comparison of two runs that `gridcast diff` prints, shared with --what-if.
#pragma once

#include <cstddef>
#include <string>

namespace gridcast::cli {

/// Prints what changed from run A to run B (prediction.json files or the --out folders that hold them,
/// with analysis.json where they have it), `top` rows per section; writes it as JSON to `json_out`
/// unless empty. `a_label`, `b_label`: what to call the runs (empty: their files). InputError naming the
/// file for a missing or malformed one.
void print_diff(const std::string& a, const std::string& b, std::size_t top, const std::string& json_out,
                const std::string& a_label, const std::string& b_label);

}  // namespace gridcast::cli
