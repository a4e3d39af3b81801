// model.json's internal pieces shared by its two source files (trace_model_json.cpp: the model and its
// template; trace_model_json_cutouts.cpp: numbered loops, tree sequences, axis sweeps and input phases).
#pragma once

#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/models/trace_model.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string_view>

namespace gridcast::models::trace::json_detail {

using json  = nlohmann::json;
using ojson = nlohmann::ordered_json;

ojson formula_json(const Formula& f);
ojson rank_json(const RankExpr& e);
Formula read_formula(const JsonObject& r);
RankExpr read_rank(const JsonObject& r);

ojson numbered_json(const NumberedLoop& l, const TraceModel& m);
ojson trees_json(const TreeSequence& t, const TraceModel& m);
ojson sweep_json(const AxisSweep& a, const TraceModel& m);
NumberedLoop read_numbered(const JsonObject& r, const TraceModel& m);
TreeSequence read_trees(const JsonObject& r, const TraceModel& m);
AxisSweep read_sweep(const JsonObject& r, const TraceModel& m);
ojson input_phases_json(const InputPhases& ip);
InputPhases read_input_phases(const JsonObject& r);

}  // namespace gridcast::models::trace::json_detail
