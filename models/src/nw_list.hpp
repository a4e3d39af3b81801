// "8, 12, 16": sizes (Nw) as the console writes them, for the fit's and the input-sensitivity test's
// messages. Internal to gridcast::models.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace gridcast::models {

inline std::string nw_list(const std::vector<double>& nws)
{
  std::ostringstream o;
  for (std::size_t i = 0; i < nws.size(); ++i)
    o << (i ? ", " : "") << nws[i];
  return o.str();
}

}  // namespace gridcast::models
