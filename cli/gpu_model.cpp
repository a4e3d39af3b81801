#include "gpu_model.hpp"

#include "commands.hpp"

#include "gridcast/foundation/digest.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/gpu_cache/model.hpp"
#include "gridcast/gpu_cache/sheet.hpp"
#include "gridcast/gpu_cache/trace.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace gridcast::cli {

void add_gpu_model_options(po::options_description& options, GpuModelArgs& args)
{
  options.add_options()
    ("gpu-model", po::value(&args.model)->default_value(args.model),
     "kernel times: recorded (as the trace gives them) or cache (the GPU memory-system model on --gpu-sheet's "
     "GPU, from each kernel's memory trace in --gpu-traces; docs/guides/gpu.md)")
    ("gpu-traces", po::value(&args.traces),
     "--gpu-model cache: a kernel memory trace, or a folder of them (native, NVBit mem_trace or Accel-Sim; "
     "docs/reference/gpu-memory-traces.md); a launch is matched by its kernel's name")
    ("gpu-sheet", po::value(&args.sheet), "--gpu-model cache: the platform GPU's memory data sheet (platforms/gpus/*.json)")
    ("gpu-source-sheet", po::value(&args.source_sheet),
     "--gpu-model cache: the data sheet of the GPU the trace was recorded on; a launch with a measured duration "
     "(device_seconds) then calibrates the model on it first")
    ("gpu-precision", po::value(&args.precision),
     "--gpu-model cache: the kernels' arithmetic, fp32 (default) or fp64 (which compute peak bounds them)");
}

std::string kernel_key(const std::string& name)
{
  std::string text = name;
  if (text.rfind("_Z", 0) == 0) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status),
                                                     std::free);
    if (status == 0 && demangled)
      text = demangled.get();
  }
  // Cut the parameter list, then a return type (a space outside template brackets): what is left is the
  // qualified name with its template arguments.
  int depth = 0;
  std::size_t end = text.size(), start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '<')
      ++depth;
    else if (ch == '>')
      depth = std::max(0, depth - 1);
    else if (depth == 0 && ch == '(') {
      end = i;
      break;
    } else if (depth == 0 && ch == ' ')
      start = i + 1;
  }
  return text.substr(start, end - start);
}

namespace {

/// The traces named by --gpu-traces: the file, or every regular file of the folder in name order.
std::vector<fs::path> trace_files(const std::string& given)
{
  std::error_code ec;
  if (fs::is_regular_file(given, ec))
    return {given};
  if (not fs::is_directory(given, ec))
    throw InputError({given, 0, {}, -1}, "--gpu-traces: no such file or folder");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(given))
    if (entry.is_regular_file())
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw InputError({given, 0, {}, -1}, "--gpu-traces: the folder holds no trace");
  return files;
}

/// What the model says of every launch of one kernel: its traffic on the platform's GPU and its time on
/// the recorded GPU (when described).
struct KernelRuns {
  std::vector<gpu_cache::KernelMetrics> target;
  std::vector<gpu_cache::KernelTime> source;
};

}  // namespace

void apply_gpu_model(const GpuModelArgs& args, emulator::ReplayOptions& options, const std::string& command)
{
  if (args.model == "recorded") {
    if (not args.traces.empty() || not args.sheet.empty() || not args.source_sheet.empty() || not args.precision.empty())
      throw UsageError{"--gpu-traces, --gpu-sheet, --gpu-source-sheet and --gpu-precision apply to --gpu-model cache "
                       "only: add it, or leave them out",
                       command};
    return;
  }
  if (args.model != "cache")
    throw UsageError{"--gpu-model: expected recorded or cache, got '" + args.model + "'", command};
  if (args.traces.empty() || args.sheet.empty())
    throw UsageError{"--gpu-model cache needs --gpu-traces (the kernels' memory traces) and --gpu-sheet (the "
                     "platform GPU's data sheet)",
                     command};
  if (not args.precision.empty() && args.precision != "fp32" && args.precision != "fp64")
    throw UsageError{"--gpu-precision: expected fp32 or fp64, got '" + args.precision + "'", command};
  gpu_cache::ModelOptions model_options;
  model_options.precision = args.precision == "fp64" ? gpu_cache::Precision::Fp64 : gpu_cache::Precision::Fp32;

  const gpu_cache::GpuSheet target = gpu_cache::read_gpu_sheet(args.sheet);
  std::optional<gpu_cache::GpuSheet> source;
  if (not args.source_sheet.empty())
    source = gpu_cache::read_gpu_sheet(args.source_sheet);

  std::map<std::string, KernelRuns> runs;
  for (const fs::path& file : trace_files(args.traces)) {
    gpu_cache::Model on_target(target, model_options);
    auto reader = gpu_cache::open_trace(file);
    for (gpu_cache::KernelMetrics& m : on_target.simulate(*reader))
      runs[kernel_key(m.launch.name)].target.push_back(std::move(m));
    if (source) {
      gpu_cache::Model on_source(*source, model_options);
      auto again = gpu_cache::open_trace(file);
      for (const gpu_cache::KernelMetrics& m : on_source.simulate(*again))
        runs[kernel_key(m.launch.name)].source.push_back(m.time);
    }
  }

  // A kernel's price: the mean over its traced launches (a launch of the application is matched by
  // name, not by which of the traced launches it is).
  auto prices = std::make_shared<std::map<std::string, emulator::KernelPrice>>();
  const gpu_cache::Precision precision = model_options.precision;
  for (auto& [key, r] : runs) {
    emulator::KernelPrice price;
    for (const gpu_cache::KernelMetrics& m : r.target)
      price.target_s += m.time.predicted_s / static_cast<double>(r.target.size());
    if (source && r.source.size() == r.target.size()) {
      auto shared = std::make_shared<KernelRuns>(r);
      price.from_measured = [shared, target, source = *source, precision](double measured_s) {
        double s = 0;
        for (std::size_t i = 0; i < shared->target.size(); ++i)
          s += gpu_cache::kernel_time(target, shared->target[i], precision,
                                      gpu_cache::calibrate(source, shared->source[i], measured_s))
                   .predicted_s;
        return s / static_cast<double>(shared->target.size());
      };
    }
    (*prices)[key] = std::move(price);
  }
  options.gpu.kernel_model     = "cache";
  options.gpu.kernel_model_gpu = target.name;
  options.gpu.kernel_price     = [prices](const std::string& function) -> std::optional<emulator::KernelPrice> {
    auto it = prices->find(kernel_key(function));
    if (it == prices->end())
      return std::nullopt;
    return it->second;
  };
}

void add_gpu_model_inputs(emulator::RunDescription& run, const GpuModelArgs& args)
{
  if (args.model != "cache")
    return;
  run.inputs.push_back({"gpu_sheet", args.sheet, digest_file(args.sheet)});
  if (not args.source_sheet.empty())
    run.inputs.push_back({"gpu_source_sheet", args.source_sheet, digest_file(args.source_sheet)});
  for (const fs::path& file : trace_files(args.traces))
    run.inputs.push_back({"gpu_memory_trace", file.string(), digest_file(file)});
}

void print_gpu_model(std::ostream& out, const emulator::ReplayOptions& options, const emulator::ReplayResult& result)
{
  if (options.gpu.kernel_model != "cache")
    return;
  out << "GPU kernels: " << result.gpu_priced_launches << " launches priced by the memory-system model on "
      << options.gpu.kernel_model_gpu;
  if (not result.gpu_unpriced_kernels.empty()) {
    out << "; without a memory trace (recorded times kept):";
    for (const auto& [name, launches] : result.gpu_unpriced_kernels)
      out << ' ' << name << " x" << launches;
  }
  out << '\n';
}

}  // namespace gridcast::cli
