// gridcast-calibrate-gpu: the GPU part of `gridcast calibrate` as a program of its own, for a GPU
// machine where gridcast itself cannot run (no SimGrid there). It links only the C++ runtime (static)
// and libdl, and loads the CUDA driver at run time. Its output is a GPU data sheet that
// `gridcast calibrate --gpu-json FILE` takes on any machine.
#include "gridcast/calibrate/measure.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/calibration/calibration.hpp"

#include <iostream>
#include <string>

namespace {

const char* const kHelp = R"(usage: gridcast-calibrate-gpu -o FILE [--quick] [--quiet]

Measures GPU 0 (and GPU 0 -> 1 when there are two) through the CUDA driver (libcuda.so.1, loaded at
run time) and writes the figures as a GPU data sheet (docs/reference/calibration-json.md, "GPU data sheet"), to be given
to `gridcast calibrate --gpu-json FILE`. Same measurements as `gridcast calibrate --gpu-only`.

options:
  -o, --out FILE      where to write the data sheet (required)
  --quick             fewer repetitions and 8 MiB copies instead of 256 MiB (a few seconds)
  --quiet             no progress display on stderr
  -h, --help          this help

Exit codes: 0 written; 1 no GPU or driver (nothing written), a CUDA call that failed (named), or a bad
command line; 2 internal error.
)";

}  // namespace

int main(int argc, char** argv)
{
  std::string output;
  bool quick = false, quiet = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << kHelp;
      return 0;
    }
    if ((a == "-o" || a == "--out") && i + 1 < argc)
      output = argv[++i];
    else if (a == "--quick")
      quick = true;
    else if (a == "--quiet")
      quiet = true;
    else {
      std::cerr << "gridcast-calibrate-gpu: unknown or incomplete option '" << a << "'\n" << kHelp;
      return 1;
    }
  }
  if (output.empty()) {
    std::cerr << "gridcast-calibrate-gpu: -o FILE is required\n" << kHelp;
    return 1;
  }
  try {
    gridcast::calibrate::Progress progress(std::cerr, gridcast::calibrate::Progress::detect(quiet));
    auto probe = gridcast::calibrate::measure_gpu(quick, progress);
    if (not probe.gpu) {
      std::cerr << "gridcast-calibrate-gpu: error: " << probe.skipped_because << ": nothing written\n";
      return 1;
    }
    gridcast::platform::write_gpu_datasheet(output, *probe.gpu);
    std::cerr << "gridcast-calibrate-gpu: wrote " << output << " (" << probe.gpu->device_name << ")\n";
    return 0;
  } catch (const gridcast::InputError& e) {
    std::cerr << "gridcast-calibrate-gpu: error: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gridcast-calibrate-gpu: internal error: " << e.what() << '\n';
    return 2;
  }
}
