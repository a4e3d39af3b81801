// Internal to gridcast::models: what the reader of TIT trace files (tit_files.cpp) needs of the line
// syntax that tit.cpp parses.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace gridcast::models::tit_syntax {

/// A whole decimal integer (no sign other than '-', no trailing characters).
bool parse_integer(std::string_view s, std::int64_t& out);
/// The blank- or tab-separated tokens of a line.
void split_tokens(std::string_view line, std::vector<std::string_view>& tokens);
/// A TIT action name in any spelling SMPI 3.32 accepts.
bool is_action_name(std::string_view name);

}  // namespace gridcast::models::tit_syntax
