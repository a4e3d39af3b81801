#include "gridcast/foundation/csv.hpp"

namespace gridcast {

std::string csv_field(const std::string& text)
{
  if (text.find_first_of(",\"\n\r") == std::string::npos)
    return text;
  std::string out = "\"";
  for (char c : text)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::string> csv_fields(const std::string& line, const ErrorContext& where)
{
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = not quoted;
    } else if (c == ',' && not quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted)
    throw InputError(where, "a quoted field is not closed");
  return fields;
}

}  // namespace gridcast
