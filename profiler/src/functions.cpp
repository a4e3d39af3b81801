// Function lists (--discover writes them, --functions reads them) and the host speed.
#include "gridcast/profiler/profiler.hpp"

#include "gridcast/profiler/raw_format.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <unordered_set>
#include <vector>

namespace fs = std::filesystem;

namespace gridcast::profiler {

std::vector<FunctionTotal> select_functions(const std::vector<FunctionTotal>& totals, double share)
{
  double total = 0;
  for (const auto& t : totals)
    total += t.seconds;
  std::vector<FunctionTotal> sorted = totals;
  std::sort(sorted.begin(), sorted.end(), [](const FunctionTotal& a, const FunctionTotal& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
  });
  std::vector<FunctionTotal> out;
  double kept = 0;
  for (const auto& t : sorted) {
    if (total > 0 && kept >= share * total)
      break;
    kept += t.seconds;  // "compute" counts towards the share but is not a function one can list
    if (t.name != "compute")
      out.push_back(t);
  }
  return out;
}

void write_function_list(const fs::path& file, const std::vector<FunctionTotal>& selected, double total_s,
                         const std::string& command)
{
  std::ostringstream out;
  out << "# gridcast function list: written by `gridcast profile --discover`\n";
  out << "# command: " << command << "\n";
  out << "# name\tseconds (all ranks)\tshare of the total\n";
  for (const auto& f : selected) {
    char line[64];
    std::snprintf(line, sizeof line, "\t%.6f\t%.4f\n", f.seconds, total_s > 0 ? f.seconds / total_s : 0.0);
    out << f.name << line;
  }
  write_file_atomically(file, out.str(), "the function list");
}

namespace {
bool symbol_char(char c, bool first)
{
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' || c == '$';
  return alpha || (not first && ((c >= '0' && c <= '9') || c == '@'));
}
}  // namespace

std::vector<std::string> read_function_list(const fs::path& file)
{
  std::vector<std::string> names;
  for (auto& e : read_function_list_entries(file))
    names.push_back(std::move(e.name));
  return names;
}

std::vector<ListedFunction> read_function_list_entries(const fs::path& file)
{
  std::ifstream in(file);
  if (not in)
    throw InputError({file.string(), 0, {}, -1}, "cannot read the function list");
  std::vector<ListedFunction> names;
  std::string line;
  std::uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (not line.empty() && line.back() == '\r')
      line.pop_back();
    auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#')
      continue;
    std::istringstream fields(line.substr(first));
    std::string name;
    fields >> name;
    for (std::size_t i = 0; i < name.size(); ++i)
      if (not symbol_char(name[i], i == 0))
        throw InputError({file.string(), line_no, {}, -1},
                         "'" + name + "' is not a symbol name (letters, digits, _ . $ @; not starting with a digit)");
    // Optional numbers after the name (a --discover list): seconds and share.
    std::string rest;
    int numbers = 0;
    while (fields >> rest) {
      char* end = nullptr;
      std::strtod(rest.c_str(), &end);
      if (end == rest.c_str() || *end != 0 || ++numbers > 2)
        throw InputError({file.string(), line_no, {}, -1},
                         "expected 'name [seconds [share]]', got '" + line.substr(first) + "'");
    }
    names.push_back({name, line_no});
  }
  return names;
}

FunctionListCheck check_function_list(const fs::path& file, const fs::path& app)
{
  auto entries = read_function_list_entries(file);
  std::vector<const ListedFunction*> unknown;
  FunctionListCheck out;
  auto base = [](const std::string& n) { return n.substr(0, n.find('@')); };
  std::vector<const ListedFunction*> rest;
  for (const auto& e : entries)
    if (not is_builtin_function(base(e.name)))
      rest.push_back(&e);
  if (rest.empty())
    return out;
  // The application's own symbols first (.symtab: static functions too), then what its libraries export;
  // the libraries are only read when a name is still unknown.
  auto own = elf_function_names(app);
  std::unordered_set<std::string> defined(own.begin(), own.end());
  std::vector<const ListedFunction*> in_libs;
  for (const auto* e : rest)
    if (defined.count(base(e->name)) > 0)
      out.application.push_back(e->name);
    else
      in_libs.push_back(e);
  if (in_libs.empty())
    return out;
  std::unordered_set<std::string> exported;
  for (const auto& lib : needed_libraries(app))
    for (auto& n : elf_exported_functions(lib))
      exported.insert(std::move(n));
  for (const auto* e : in_libs)
    if (exported.count(base(e->name)) > 0)
      out.libraries.push_back(e->name);
    else
      unknown.push_back(e);
  if (not unknown.empty()) {
    std::string more;
    if (unknown.size() > 1) {
      more = " (" + std::to_string(unknown.size() - 1) + " more unknown:";
      for (std::size_t i = 1; i < unknown.size() && i < 6; ++i)
        more += " '" + unknown[i]->name + "' (line " + std::to_string(unknown[i]->line) + ")";
      more += unknown.size() > 6 ? " ...)" : ")";
    }
    throw InputError({file.string(), unknown.front()->line, {}, -1},
                     "unknown symbol '" + unknown.front()->name + "': not a function the hook wraps (MPI, "
                     "BLAS/LAPACK, CUDA, NCCL), not in the symbol tables of " + app.string() +
                     " nor exported by a library it needs" + more);
  }
  return out;
}

bool is_builtin_function(const std::string& name)
{
  for (const char* n : hook::kFnNames)
    if (name == n)
      return true;
  return false;
}

}  // namespace gridcast::profiler
