// `gridcast gpu-cache TRACE --gpu SHEET.json [-o metrics.json]`: runs a kernel memory trace through the
// GPU memory-system model of a data sheet and prints (and writes) each kernel's cache and DRAM traffic
// and its time on that GPU. docs/reference/gpu-cache-model.md.
#include "commands.hpp"
#include "options.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/gpu_cache/model.hpp"
#include "gridcast/gpu_cache/sheet.hpp"
#include "gridcast/gpu_cache/trace.hpp"

#include <boost/program_options.hpp>

#include <iostream>

namespace po = boost::program_options;

namespace gridcast::cli {

namespace {

gpu_cache::TraceFormat trace_format_from(const std::string& name)
{
  using gpu_cache::TraceFormat;
  if (name == "auto") return TraceFormat::Auto;
  if (name == "jsonl") return TraceFormat::NativeJsonl;
  if (name == "binary") return TraceFormat::NativeBinary;
  if (name == "nvbit") return TraceFormat::NvbitMemTrace;
  if (name == "accelsim") return TraceFormat::AccelSim;
  throw UsageError{"--format must be auto, jsonl, binary, nvbit or accelsim, not '" + name + "'", "gpu-cache"};
}

}  // namespace

int run_gpu_cache(const std::vector<std::string>& args)
{
  std::string trace, sheet_file, out, format = "auto", precision = "fp32";
  po::options_description options("gpu-cache options");
  options.add_options()
    ("trace", po::value(&trace)->required(),
     "kernel memory trace: gridcast's JSON lines or binary encoding, NVBit mem_trace text, Accel-Sim .traceg")
    ("gpu", po::value(&sheet_file)->required(), "GPU data sheet (platforms/gpus/*.json)")
    ("out,o", po::value(&out), "metrics file to write (JSON, one object per kernel launch)")
    ("format", po::value(&format)->default_value("auto"),
     "trace format: auto (by content), jsonl, binary, nvbit (NVBit mem_trace text) or accelsim (.traceg)")
    ("precision", po::value(&precision)->default_value("fp32"),
     "the peak the kernels' flops run at in the time's compute term: fp32 or fp64")
    ("no-trace-sm", "time-ordered traces: place CTAs with the model's scheduler even where the trace names the SM")
    ("quiet,q", "print nothing but errors");
  po::positional_options_description positional;
  positional.add("trace", 1);
  po::variables_map vm;
  if (not parse("gpu-cache", "gpu-cache TRACE --gpu SHEET.json [-o metrics.json] [--format auto|jsonl|binary|nvbit|accelsim]",
                args, options, positional, vm,
                "Runs every kernel of a memory trace through the GPU's memory system: CTAs scheduled on the SMs,\n"
                "warp accesses coalesced into 32-byte sectors, each SM's L1 (sized by the shared-memory carve-out)\n"
                "and the sliced L2, then DRAM; and the kernel's time on that GPU by a bounded roofline. Prints one\n"
                "line per kernel; -o writes the metrics. See docs/reference/gpu-cache-model.md."))
    return 0;
  const gpu_cache::TraceFormat trace_format = trace_format_from(format);
  if (precision != "fp32" && precision != "fp64")
    throw UsageError{"--precision must be fp32 or fp64, not '" + precision + "'", "gpu-cache"};

  const gpu_cache::GpuSheet sheet = gpu_cache::read_gpu_sheet(sheet_file);
  gpu_cache::ModelOptions model_options;
  model_options.precision    = precision == "fp64" ? gpu_cache::Precision::Fp64 : gpu_cache::Precision::Fp32;
  model_options.use_trace_sm = vm.count("no-trace-sm") == 0;
  std::unique_ptr<gpu_cache::TraceReader> reader = gpu_cache::open_trace(trace, trace_format);
  gpu_cache::Model model(sheet, model_options);
  std::vector<gpu_cache::KernelMetrics> kernels;
  try {
    kernels = model.simulate(*reader);
  } catch (const InputError& e) {
    if (not e.context().file.empty())
      throw;
    // The model's own errors (a CTA that fits no SM, a warp beyond its CTA) are about the trace.
    throw InputError({trace, 0, e.context().key, -1}, e.reason());
  }
  if (not out.empty())
    write_file_atomically(out, gpu_cache::metrics_json(sheet, trace, kernels), "the metrics");
  if (vm.count("quiet") == 0) {
    std::cout << sheet.name << ", " << kernels.size() << " kernel launch(es) of " << trace << '\n';
    gpu_cache::print_table(std::cout, kernels);
    if (not out.empty())
      std::cout << "wrote " << out << '\n';
  }
  return 0;
}

}  // namespace gridcast::cli
