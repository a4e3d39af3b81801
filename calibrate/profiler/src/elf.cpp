// ELF checks of the driver: is the application dynamically linked to MPI (like ldd, without running
// it), and which functions does it define (to tell which names of a function list can be recorded).
#include "gridcast/profiler/profiler.hpp"

#include "gridcast/models/errors.hpp"

#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace gridcast::profiler {
namespace {

std::string read_file(const fs::path& file)
{
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_elf64(const std::string& bytes)
{
  return bytes.size() >= sizeof(Elf64_Ehdr) && std::memcmp(bytes.data(), ELFMAG, SELFMAG) == 0 &&
         bytes[EI_CLASS] == ELFCLASS64;
}

template <typename T>
const T* at(const std::string& bytes, std::uint64_t offset, std::uint64_t count = 1)
{
  if (offset > bytes.size() || count * sizeof(T) > bytes.size() - offset)
    return nullptr;
  return reinterpret_cast<const T*>(bytes.data() + offset);
}

/// DT_NEEDED names and DT_RUNPATH/DT_RPATH of an ELF image; `dynamic` false when it has no dynamic section.
struct DynamicInfo {
  bool dynamic = false;
  std::vector<std::string> needed;
  std::vector<std::string> runpath;
};

DynamicInfo dynamic_info(const std::string& bytes)
{
  DynamicInfo info;
  const auto* eh = at<Elf64_Ehdr>(bytes, 0);
  const auto* sh = eh ? at<Elf64_Shdr>(bytes, eh->e_shoff, eh->e_shnum) : nullptr;
  if (sh == nullptr)
    return info;
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_DYNAMIC || sh[i].sh_link >= eh->e_shnum)
      continue;
    info.dynamic = true;
    const auto& strs = sh[sh[i].sh_link];
    const auto* dyn = at<Elf64_Dyn>(bytes, sh[i].sh_offset, sh[i].sh_size / sizeof(Elf64_Dyn));
    if (dyn == nullptr)
      continue;
    for (std::uint64_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Dyn) && dyn[k].d_tag != DT_NULL; ++k) {
      if (dyn[k].d_tag != DT_NEEDED && dyn[k].d_tag != DT_RUNPATH && dyn[k].d_tag != DT_RPATH)
        continue;
      std::uint64_t off = strs.sh_offset + dyn[k].d_un.d_val;
      if (off >= bytes.size())
        continue;
      std::string s(bytes.data() + off, strnlen(bytes.data() + off, bytes.size() - off));
      if (dyn[k].d_tag == DT_NEEDED)
        info.needed.push_back(s);
      else {
        std::stringstream parts(s);
        std::string p;
        while (std::getline(parts, p, ':'))
          info.runpath.push_back(p);
      }
    }
  }
  return info;
}

std::optional<fs::path> find_library(const std::string& name, const std::vector<std::string>& runpath,
                                     const fs::path& origin)
{
  std::vector<std::string> dirs;
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::stringstream parts(ld);
    std::string p;
    while (std::getline(parts, p, ':'))
      dirs.push_back(p);
  }
  for (auto p : runpath) {
    if (auto pos = p.find("$ORIGIN"); pos != std::string::npos)
      p.replace(pos, 7, origin.string());
    dirs.push_back(p);
  }
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
                        "/usr/lib", "/usr/local/lib"})
    dirs.emplace_back(d);
  for (const auto& d : dirs) {
    fs::path p = fs::path(d) / name;
    std::error_code ec;
    if (not d.empty() && fs::exists(p, ec))
      return p;
  }
  return std::nullopt;
}

bool needs_mpi(const fs::path& file, std::set<std::string>& seen, int depth)
{
  std::string bytes = read_file(file);
  if (not is_elf64(bytes))
    return false;
  DynamicInfo info = dynamic_info(bytes);
  for (const auto& n : info.needed) {
    if (n.rfind("libmpi", 0) == 0)
      return true;
    if (depth >= 4 || not seen.insert(n).second)
      continue;
    if (auto lib = find_library(n, info.runpath, file.parent_path()))
      if (needs_mpi(*lib, seen, depth + 1))
        return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> elf_function_names(const fs::path& file)
{
  std::vector<std::string> out;
  std::string bytes = read_file(file);
  if (not is_elf64(bytes))
    return out;
  const auto* eh = at<Elf64_Ehdr>(bytes, 0);
  const auto* sh = at<Elf64_Shdr>(bytes, eh->e_shoff, eh->e_shnum);
  if (sh == nullptr)
    return out;
  for (std::uint32_t want : {static_cast<std::uint32_t>(SHT_SYMTAB), static_cast<std::uint32_t>(SHT_DYNSYM)}) {
    for (int i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum)
        continue;
      const auto& strs = sh[sh[i].sh_link];
      std::uint64_t count = sh[i].sh_size / sizeof(Elf64_Sym);
      const auto* syms = at<Elf64_Sym>(bytes, sh[i].sh_offset, count);
      if (syms == nullptr)
        continue;
      for (std::uint64_t k = 0; k < count; ++k) {
        std::uint64_t off = strs.sh_offset + syms[k].st_name;
        if (ELF64_ST_TYPE(syms[k].st_info) == STT_FUNC && syms[k].st_value != 0 && off < bytes.size())
          out.emplace_back(bytes.data() + off, strnlen(bytes.data() + off, bytes.size() - off));
      }
    }
    if (not out.empty())
      break;
  }
  return out;
}

bool elf_imports(const fs::path& file, const std::string& symbol)
{
  std::string bytes = read_file(file);
  if (not is_elf64(bytes))
    return false;
  const auto* eh = at<Elf64_Ehdr>(bytes, 0);
  const auto* sh = at<Elf64_Shdr>(bytes, eh->e_shoff, eh->e_shnum);
  if (sh == nullptr)
    return false;
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
      continue;
    const auto& strs = sh[sh[i].sh_link];
    std::uint64_t count = sh[i].sh_size / sizeof(Elf64_Sym);
    const auto* syms = at<Elf64_Sym>(bytes, sh[i].sh_offset, count);
    for (std::uint64_t k = 0; syms != nullptr && k < count; ++k) {
      std::uint64_t off = strs.sh_offset + syms[k].st_name;
      if (syms[k].st_shndx == SHN_UNDEF && off < bytes.size() &&
          symbol == std::string_view(bytes.data() + off, strnlen(bytes.data() + off, bytes.size() - off)))
        return true;
    }
  }
  return false;
}

std::optional<fs::path> find_application(const std::vector<std::string>& command)
{
  if (command.empty())
    return std::nullopt;
  std::size_t i = 0;
  std::string launcher = fs::path(command[0]).filename().string();
  if (launcher == "mpirun" || launcher == "mpiexec" || launcher == "orterun" || launcher == "mpiexec.openmpi" ||
      launcher == "mpirun.openmpi") {
    // Skip the launcher's options; those that take a value skip it too.
    static const std::set<std::string> kOneValue = {
        "-np", "-n", "-c", "--np", "--n", "-H", "-host", "--host", "-hostfile", "--hostfile", "-machinefile",
        "--machinefile", "-x", "--map-by", "-map-by", "--bind-to", "-bind-to", "--rank-by", "-rank-by", "-N",
        "--npernode", "-npernode", "-wdir", "--wdir", "-wd", "--prefix", "-prefix", "--output-filename",
        "-output-filename", "--cpus-per-proc", "--cpus-per-rank", "--report-bindings-file", "--tag-output-file",
        "-am", "--am", "--app", "-app", "--preload-files", "--path", "-path"};
    static const std::set<std::string> kTwoValues = {"-mca", "--mca", "-gmca", "--gmca"};
    for (i = 1; i < command.size(); ++i) {
      const std::string& a = command[i];
      if (a.empty() || a[0] != '-')
        break;
      if (a.find('=') != std::string::npos)
        continue;
      if (kTwoValues.count(a) > 0)
        i += 2;
      else if (kOneValue.count(a) > 0)
        i += 1;
    }
    if (i >= command.size())
      return std::nullopt;
  }
  fs::path app = command[i];
  if (app.has_parent_path())
    return app;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream parts(path);
    std::string dir;
    while (std::getline(parts, dir, ':')) {
      fs::path p = fs::path(dir.empty() ? "." : dir) / app;
      if (access(p.c_str(), X_OK) == 0 && not fs::is_directory(p))
        return p;
    }
  }
  return app;
}

bool links_mpi_dynamically(const fs::path& app)
{
  std::error_code ec;
  if (not fs::exists(app, ec))
    throw InputError({app.string(), 0, {}, -1}, "no such application");
  std::string bytes = read_file(app);
  if (not is_elf64(bytes))
    throw InputError({app.string(), 0, {}, -1},
                     "not an ELF executable: the profiler preloads a library into the MPI application itself, "
                     "so the command must launch it directly (not through a script)");
  std::set<std::string> seen;
  return needs_mpi(app, seen, 0);
}

}  // namespace gridcast::profiler
