// --gpu-model cache of `replay` and `predict`: kernel times on the platform's GPU from the GPU memory-system
// model (gridcast::gpu_cache) run over each kernel's memory trace (docs/guides/gpu.md, "Kernel times on
// another GPU").
#pragma once

#include "gridcast/emulator/replay.hpp"
#include "gridcast/emulator/report.hpp"

#include <boost/program_options.hpp>

#include <ostream>
#include <string>

namespace gridcast::cli {

struct GpuModelArgs {
  std::string model = "recorded";  ///< recorded | cache
  std::string traces;              ///< a memory trace, or a folder of them (every regular file in it)
  std::string sheet;               ///< the platform's GPU: a memory data sheet (platforms/gpus/*.json)
  std::string source_sheet;        ///< the GPU the trace was recorded on (calibration from measured times)
  std::string precision;           ///< the kernels' arithmetic: fp32 (empty: the default) | fp64 (the roofline's compute peak)
};

void add_gpu_model_options(boost::program_options::options_description& options, GpuModelArgs& args);

/// Checks the combination (a trace folder or a sheet given without `--gpu-model cache` is refused, never
/// ignored), then runs the memory-system model over every kernel of every trace and installs the prices
/// in `options.gpu`. Bad traces and sheets are InputErrors naming the file and line or key.
void apply_gpu_model(const GpuModelArgs& args, emulator::ReplayOptions& options, const std::string& command);

/// Adds the data sheets and every memory trace of --gpu-model cache, with their digests, to the inputs of
/// prediction.json (nothing under --gpu-model recorded).
void add_gpu_model_inputs(emulator::RunDescription& run, const GpuModelArgs& args);

/// One console line after the summary: how many launches the model priced, and the kernels it could not.
void print_gpu_model(std::ostream& out, const emulator::ReplayOptions& options, const emulator::ReplayResult& result);

/// The name a kernel is matched by: demangled, without its parameter list and return type
/// ("_Z11gemm_kernelPKfS0_Pfi" and "gemm_kernel(float const*, float const*, float*, int)" give "gemm_kernel").
std::string kernel_key(const std::string& name);

}  // namespace gridcast::cli
