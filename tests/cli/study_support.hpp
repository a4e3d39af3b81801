// The studies the `gridcast study` tests run: the bundled stencil model (examples/predict-stencil) on the
// spec of examples/study-stencil, over np and three network variants.
#pragma once

#include "../support.hpp"

#include <string>

namespace gridcast::test {

/// Writes DIR/study.json: 4 values of np x 3 variants = 12 points at Nw `nw` (a larger Nw, with
/// fast-forward off, makes each point take longer: about 0.7 s at 128 on one core).
inline std::filesystem::path write_stencil_study(const TempDir& dir, int nw = 32, bool fast_forward = true)
{
  const std::string examples = std::string(GRIDCAST_SOURCE_DIR) + "/examples/";
  write_file(dir / "study.json",
             "{\"name\": \"stencil-test\", \"predict\": \"" + examples + "predict-stencil/model.json\",\n"
             " \"platform\": {\"spec\": \"" + examples + "study-stencil/spec.json\"},\n"
             " \"scaling\": \"weak\",\n"
             " \"set\": {\"nw\": " + std::to_string(nw) + (fast_forward ? "" : ", \"fast_forward\": \"off\"") + "},\n"
             " \"axes\": [{\"key\": \"np\", \"values\": [4, 8, 16, 32]}],\n"
             " \"variants\": [{\"name\": \"10G\"},\n"
             "   {\"name\": \"40G\", \"set\": {\"spec.node_kinds.node.nics.link.bandwidth\": \"40Gbps\"}},\n"
             "   {\"name\": \"50us\", \"set\": {\"spec.node_kinds.node.nics.link.latency\": \"50us\"}}]}\n");
  return dir / "study.json";
}

}  // namespace gridcast::test
