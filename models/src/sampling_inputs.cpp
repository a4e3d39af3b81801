// The fit's input-sensitivity test (issue 19 item 4; the seed's Algorithm 1 and Eq. 6): the phases of the
// training profiles' main loop at one Np, and which of them move with the input size. model.json keeps the
// result (TraceModel::input_phases) so that `predict` can say when a target leans on a phase whose time
// moves with the input and which was tested on few sizes.
#include "gridcast/models/profile.hpp"
#include "gridcast/models/sampling.hpp"
#include "nw_list.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace gridcast::models::sampling {


void test_input_phases(trace::TraceModel& model)
{
  model.input_phases.reset();
  model.input_phases_note.clear();
  // The Np with the most sizes (the largest Np on a tie): the most inputs to compare at one process count.
  std::map<int, std::map<double, std::string>> by_np;  // np -> nw -> first profile at that point
  for (const trace::TrainingPoint& t : model.training)
    by_np[t.np].try_emplace(t.nw, t.profile);
  int np = 0;
  std::size_t most = 0;
  for (const auto& [p, nws] : by_np)
    if (nws.size() >= most) {
      most = nws.size();
      np = p;
    }
  if (most < 2) {
    model.input_phases_note = "no Np has training profiles at two sizes (Nw) to compare";
    return;
  }
  const std::map<double, std::string>& at = by_np.at(np);
  const auto& [training_nw, training_profile] = *at.rbegin();
  ProfileDir train_dir(training_profile);
  const Units train = collect_recorded_units(train_dir, train_dir.info().host.speed_flops);
  if (train.count == 0) {
    model.input_phases_note = "the profile at Nw " + nw_list({training_nw}) + ", Np " + std::to_string(np) +
                              " has no main loop to form phases in (" + train.why_not + ")";
    return;
  }
  std::vector<Units> references;
  std::vector<double> compared, skipped;
  for (const auto& [nw, profile] : at) {
    if (nw == training_nw)
      continue;
    ProfileDir dir(profile);
    Units u = collect_recorded_units(dir, dir.info().host.speed_flops);
    if (u.count == 0) {
      skipped.push_back(nw);
      continue;
    }
    references.push_back(std::move(u));
    compared.push_back(nw);
  }
  if (references.empty()) {
    model.input_phases_note = "the profiles at Nw " + nw_list(skipped) + ", Np " + std::to_string(np) +
                              " have no main loop to compare with Nw " + nw_list({training_nw});
    return;
  }
  const Phases phases = form_phases(train);
  const std::vector<PhaseSensitivity> s = input_sensitivity(train, phases, references);
  trace::InputPhases out;
  out.np = np;
  out.training_nw = training_nw;
  out.compared_nw = compared;
  out.loop = train.loop;
  out.units = train.count;
  out.phases.resize(static_cast<std::size_t>(phases.k));
  double total = 0;
  for (std::size_t i = 0; i < train.count; ++i) {
    trace::InputPhase& p = out.phases[static_cast<std::size_t>(phases.of_unit[i])];
    p.share += train.proxy_s[i];
    ++p.units;
    total += train.proxy_s[i];
  }
  for (std::size_t h = 0; h < out.phases.size(); ++h) {
    trace::InputPhase& p = out.phases[h];
    p.share = total > 0 ? p.share / total : 0.0;
    p.mean_s = s[h].train_mean;
    p.std_s = s[h].train_std;
    p.sensitive = s[h].sensitive;
    p.compared_inputs = s[h].compared;
    p.sensitive_functions = s[h].sensitive_functions;
    p.distinct = phases.distinct[h];
  }
  if (not skipped.empty())
    model.input_phases_note = "the profiles at Nw " + nw_list(skipped) + " have no main loop and were not compared";
  model.input_phases = std::move(out);
}

std::vector<std::string> input_phase_warnings(const trace::TraceModel& model, double nw)
{
  std::vector<std::string> out;
  if (not model.input_phases)
    return out;
  const trace::InputPhases& ip = *model.input_phases;
  if (nw == ip.training_nw || std::count(ip.compared_nw.begin(), ip.compared_nw.end(), nw) > 0)
    return out;  // a tested size: nothing leans on how the phase scales
  for (std::size_t h = 0; h < ip.phases.size(); ++h) {
    const trace::InputPhase& p = ip.phases[h];
    const bool untested = p.compared_inputs == 0;
    if ((not p.sensitive && not untested) || p.share < kLeaningShare ||
        (not untested && ip.inputs() >= kInputsForSensitivePhase))
      continue;
    std::ostringstream o;
    o.precision(3);
    o << "phase " << h << " of the main loop (" << 100 * p.share << " % of its time at Nw " << ip.training_nw
      << ", Np " << ip.np << ")";
    if (untested) {
      o << " has no iteration of the other sizes (Nw " << nw_list(ip.compared_nw)
        << ") in it: whether its time moves with the input is untested, and Nw " << nw
        << " leans on it; profile more sizes to check it";
    } else {
      o << " is input sensitive";
      if (not p.sensitive_functions.empty()) {
        o << " (work of ";
        for (std::size_t f = 0; f < p.sensitive_functions.size(); ++f)
          o << (f ? ", " : "") << p.sensitive_functions[f];
        o << ')';
      }
      o << " and was tested on " << ip.inputs() << " input sizes only (Nw " << nw_list(ip.compared_nw) << ", "
        << ip.training_nw << "): Nw " << nw << " leans on how it scales; profile a third size to check it";
    }
    out.push_back(o.str());
  }
  return out;
}

}  // namespace gridcast::models::sampling
