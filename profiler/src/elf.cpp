// ELF checks of the driver, read with libelf (elfutils): is the application dynamically linked to MPI
// (like ldd, without running it), which libraries does it need, and which functions do they define (to
// check a function list before the run).
#include "gridcast/profiler/profiler.hpp"

#include "gridcast/foundation/errors.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace gridcast::profiler {
namespace {

/// One ELF file opened read-only through libelf; `elf()` is null when the file is missing or not ELF.
class ElfFile {
public:
  explicit ElfFile(const fs::path& file)
  {
    // elf_version must be called once before any other libelf call; it is idempotent.
    if (elf_version(EV_CURRENT) == EV_NONE)
      return;
    fd_ = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      return;
    elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
    if (elf_ != nullptr && elf_kind(elf_) != ELF_K_ELF) {
      elf_end(elf_);
      elf_ = nullptr;
    }
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile()
  {
    if (elf_ != nullptr)
      elf_end(elf_);
    if (fd_ >= 0)
      close(fd_);
  }
  Elf* elf() const { return elf_; }

  /// Calls `f(shdr, data)` for every section of type `type` (with its data).
  template <typename F>
  void for_sections(std::uint32_t type, F&& f) const
  {
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != type)
        continue;
      if (Elf_Data* data = elf_getdata(scn, nullptr); data != nullptr)
        f(sh, data);
    }
  }

  /// Calls `f(sym, name)` for every symbol of the sections of type `type` (SHT_SYMTAB or SHT_DYNSYM).
  template <typename F>
  void for_symbols(std::uint32_t type, F&& f) const
  {
    for_sections(type, [&](const GElf_Shdr& sh, Elf_Data* data) {
      std::size_t count = sh.sh_entsize > 0 ? sh.sh_size / sh.sh_entsize : 0;
      for (std::size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr)
          continue;
        const char* name = elf_strptr(elf_, sh.sh_link, sym.st_name);
        if (name != nullptr && *name != 0)
          f(sym, name);
      }
    });
  }

private:
  int fd_ = -1;
  Elf* elf_ = nullptr;
};

/// A function the file defines: FUNC or IFUNC (glibc's memcpy...), with an address.
bool defines_function(const GElf_Sym& sym)
{
  int type = GELF_ST_TYPE(sym.st_info);
  return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_shndx != SHN_UNDEF && sym.st_value != 0;
}

/// DT_NEEDED names and DT_RUNPATH/DT_RPATH directories of an ELF file.
struct DynamicInfo {
  std::vector<std::string> needed;
  std::vector<std::string> runpath;
};

DynamicInfo dynamic_info(const ElfFile& f)
{
  DynamicInfo info;
  f.for_sections(SHT_DYNAMIC, [&](const GElf_Shdr& sh, Elf_Data* data) {
    std::size_t count = sh.sh_entsize > 0 ? sh.sh_size / sh.sh_entsize : 0;
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Dyn dyn;
      if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL)
        break;
      if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
        continue;
      const char* s = elf_strptr(f.elf(), sh.sh_link, dyn.d_un.d_val);
      if (s == nullptr)
        continue;
      if (dyn.d_tag == DT_NEEDED) {
        info.needed.emplace_back(s);
      } else {
        std::stringstream parts(s);
        std::string p;
        while (std::getline(parts, p, ':'))
          info.runpath.push_back(p);
      }
    }
  });
  return info;
}

/// Where the dynamic linker would find library `name`: LD_LIBRARY_PATH, the file's RUNPATH/RPATH ($ORIGIN
/// expanded), then the system directories of Debian's multiarch layout.
std::optional<fs::path> find_library(const std::string& name, const std::vector<std::string>& runpath,
                                     const fs::path& origin)
{
  if (name.find('/') != std::string::npos)
    return fs::path(name);
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

void check_application(const fs::path& app)
{
  std::error_code ec;
  if (not fs::exists(app, ec))
    throw InputError({app.string(), 0, {}, -1}, "no such application");
  if (ElfFile(app).elf() == nullptr)
    throw InputError({app.string(), 0, {}, -1},
                     "not an ELF executable: the profiler preloads a library into the MPI application itself, "
                     "so the command must launch it directly (not through a script)");
}

}  // namespace

std::vector<std::string> elf_function_names(const fs::path& file)
{
  std::vector<std::string> out;
  ElfFile f(file);
  if (f.elf() == nullptr)
    return out;
  // .symtab has every function (static ones too); a stripped file keeps only .dynsym.
  for (std::uint32_t type : {static_cast<std::uint32_t>(SHT_SYMTAB), static_cast<std::uint32_t>(SHT_DYNSYM)}) {
    f.for_symbols(type, [&](const GElf_Sym& sym, const char* name) {
      if (defines_function(sym))
        out.emplace_back(name);
    });
    if (not out.empty())
      break;
  }
  return out;
}

std::vector<std::string> elf_exported_functions(const fs::path& file)
{
  std::vector<std::string> out;
  ElfFile f(file);
  if (f.elf() == nullptr)
    return out;
  f.for_symbols(SHT_DYNSYM, [&](const GElf_Sym& sym, const char* name) {
    if (defines_function(sym) && GELF_ST_BIND(sym.st_info) != STB_LOCAL)
      out.emplace_back(name);
  });
  return out;
}

bool elf_imports(const fs::path& file, const std::string& symbol)
{
  ElfFile f(file);
  if (f.elf() == nullptr)
    return false;
  bool found = false;
  f.for_symbols(SHT_DYNSYM, [&](const GElf_Sym& sym, const char* name) {
    found = found || (sym.st_shndx == SHN_UNDEF && symbol == name);
  });
  return found;
}

std::vector<fs::path> needed_libraries(const fs::path& app)
{
  std::vector<fs::path> out;
  std::set<std::string> seen;
  // Breadth first, as the dynamic linker loads them; each soname once.
  std::vector<fs::path> queue = {app};
  for (std::size_t i = 0; i < queue.size(); ++i) {
    ElfFile f(queue[i]);
    if (f.elf() == nullptr)
      continue;
    DynamicInfo info = dynamic_info(f);
    for (const auto& n : info.needed) {
      if (not seen.insert(n).second)
        continue;
      if (auto lib = find_library(n, info.runpath, queue[i].parent_path())) {
        queue.push_back(*lib);
        out.push_back(*lib);
      }
    }
  }
  return out;
}

std::optional<fs::path> find_application(const std::vector<std::string>& command)
{
  if (command.empty())
    return std::nullopt;
  std::size_t i = 0;
  std::string launcher = fs::path(command[0]).filename().string();
  const bool mpirun = launcher == "mpirun" || launcher == "mpiexec" || launcher == "orterun" ||
                      launcher == "mpiexec.openmpi" || launcher == "mpirun.openmpi" || launcher == "mpiexec.hydra" ||
                      launcher == "mpirun.mpich" || launcher == "mpiexec.mpich";
  const bool srun = launcher == "srun";
  if (mpirun || srun) {
    // Skip the launcher's options; those that take a separate value skip it too ("--opt=value" is one).
    static const std::set<std::string> kMpirunOneValue = {
        "-np", "-n", "-c", "--np", "--n", "-H", "-host", "--host", "-hostfile", "--hostfile", "-machinefile",
        "--machinefile", "-x", "--map-by", "-map-by", "--bind-to", "-bind-to", "--rank-by", "-rank-by", "-N",
        "--npernode", "-npernode", "-wdir", "--wdir", "-wd", "--prefix", "-prefix", "--output-filename",
        "-output-filename", "--cpus-per-proc", "--cpus-per-rank", "--report-bindings-file", "--tag-output-file",
        "-am", "--am", "--app", "-app", "--preload-files", "--path", "-path", "-ppn", "-f"};
    static const std::set<std::string> kMpirunTwoValues = {"-mca", "--mca", "-gmca", "--gmca", "-genv", "-env"};
    // Slurm's short options that take a value (the long ones are written --name=value or --name value).
    static const std::set<std::string> kSrunOneValue = {
        "-n", "-N", "-c", "-p", "-t", "-J", "-w", "-x", "-o", "-e", "-i", "-A", "-q", "-D", "-m", "-B", "-C", "-d",
        "-G", "-L", "-r", "-T", "-W", "--ntasks", "--nodes", "--cpus-per-task", "--partition", "--time",
        "--job-name", "--nodelist", "--exclude", "--output", "--error", "--input", "--account", "--qos",
        "--chdir", "--distribution", "--constraint", "--dependency", "--gpus", "--licenses", "--mpi",
        "--ntasks-per-node", "--mem", "--mem-per-cpu", "--cpu-bind", "--export", "--gres", "--reservation"};
    for (i = 1; i < command.size(); ++i) {
      const std::string& a = command[i];
      if (a.empty() || a[0] != '-')
        break;
      if (a.find('=') != std::string::npos)
        continue;
      if (mpirun && kMpirunTwoValues.count(a) > 0)
        i += 2;
      else if ((mpirun && kMpirunOneValue.count(a) > 0) || (srun && kSrunOneValue.count(a) > 0))
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
  check_application(app);
  for (const auto& lib : needed_libraries(app))
    if (lib.filename().string().rfind("libmpi", 0) == 0)
      return true;
  return false;
}

}  // namespace gridcast::profiler
