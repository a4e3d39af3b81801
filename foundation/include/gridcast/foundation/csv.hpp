// The CSV files gridcast writes (a study's results.csv, a run's ranks.csv and links.csv): RFC 4180 fields,
// quoted only where they must be, and the reading of one line back. Part of gridcast::foundation.
#pragma once

#include "gridcast/foundation/errors.hpp"

#include <string>
#include <vector>

namespace gridcast {

/// `text` as a CSV field: as it is, or between double quotes (doubled inside) when it holds a comma, a
/// quote or a line break.
std::string csv_field(const std::string& text);

/// The fields of one line as csv_field wrote them; InputError at `where` when a quote is not closed.
std::vector<std::string> csv_fields(const std::string& line, const ErrorContext& where);

}  // namespace gridcast
