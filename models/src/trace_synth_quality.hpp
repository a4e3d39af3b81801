// Internal to gridcast::models: the model-quality part of synthesis (trace_synth_quality.cpp).
#pragma once
#include "gridcast/models/trace_synth.hpp"

namespace gridcast::models::trace {

/// The target over the training range, per axis (nw_factor, np_factor of `q`): above the largest, below
/// the smallest, or 1 inside.
void note_extrapolation(const TraceModel& m, const SynthTarget& t, ModelQuality& q);

}  // namespace gridcast::models::trace
