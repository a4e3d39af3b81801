// `gridcast phases`: the sampling units of a run and their phases (docs/reference/sampling.md), from a model
// at a target (Nw, Np) or from a recorded profile: what `predict --sample` would stratify, readable.
#include "commands.hpp"
#include "options.hpp"
#include "sampling.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/sampling.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace po = boost::program_options;

namespace gridcast::cli {

namespace {

struct PhaseRow {
  std::uint64_t units = 0;
  double proxy_s = 0, proxy_mean_s = 0, proxy_cv = 0;
  std::uint64_t first_unit = 0;
  std::vector<std::string> distinct;
};

std::vector<PhaseRow> phase_rows(const models::sampling::Units& u, const models::sampling::Phases& p)
{
  std::vector<PhaseRow> rows(static_cast<std::size_t>(p.k));
  std::vector<double> sum2(rows.size());
  for (std::size_t i = 0; i < u.count; ++i) {
    PhaseRow& r = rows[static_cast<std::size_t>(p.of_unit[i])];
    if (r.units == 0)
      r.first_unit = i;
    ++r.units;
    r.proxy_s += u.proxy_s[i];
  }
  for (std::size_t h = 0; h < rows.size(); ++h) {
    rows[h].proxy_mean_s = rows[h].proxy_s / static_cast<double>(rows[h].units);
    rows[h].distinct = p.distinct[h];
  }
  for (std::size_t i = 0; i < u.count; ++i) {
    const std::size_t h = static_cast<std::size_t>(p.of_unit[i]);
    sum2[h] += std::pow(u.proxy_s[i] - rows[h].proxy_mean_s, 2);
  }
  for (std::size_t h = 0; h < rows.size(); ++h)
    rows[h].proxy_cv = rows[h].units > 1 && rows[h].proxy_mean_s > 0
                           ? std::sqrt(sum2[h] / static_cast<double>(rows[h].units - 1)) / rows[h].proxy_mean_s
                           : 0.0;
  return rows;
}

std::string joined(const std::vector<std::string>& v)
{
  std::string s;
  for (const std::string& x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "-" : s;
}

/// The input-sensitivity table of the training input's phases against the other profiles; its JSON.
nlohmann::ordered_json report_sensitivity(const models::sampling::Units& train, const models::sampling::Phases& phases,
                                          const std::vector<models::sampling::Units>& refs,
                                          const std::vector<std::string>& names)
{
  const std::vector<models::sampling::PhaseSensitivity> s = models::sampling::input_sensitivity(train, phases, refs);
  std::cout << "\ninput sensitivity (Eq. 6: mean or spread of the units' time moved by more than 10 %):\n";
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t h = 0; h < s.size(); ++h) {
    const models::sampling::PhaseSensitivity& p = s[h];
    std::cout << "phase " << h << ": " << (p.compared == 0 ? "untested (no unit of the other inputs in it)"
                                                : p.sensitive   ? "input sensitive"
                                                                : "not input sensitive") << "; training "
              << std::scientific << std::setprecision(3) << p.train_mean << " s +/- " << p.train_std << " s";
    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    for (std::size_t r = 0; r < refs.size(); ++r) {
      std::cout << "; " << names[r] << ": ";
      if (p.units[r] == 0)
        std::cout << "no unit";
      else
        std::cout << p.mean[r] << " s +/- " << p.std[r] << " s (" << p.units[r] << " units)";
      inputs.push_back({{"input", names[r]}, {"units", p.units[r]}, {"mean_s", p.mean[r]}, {"std_s", p.std[r]}});
    }
    std::cout << std::fixed << '\n';
    if (not p.sensitive_functions.empty())
      std::cout << "  functions whose work per unit moved: " << joined(p.sensitive_functions) << '\n';
    out.push_back({{"phase", h},
                   {"sensitive", p.sensitive},
                   {"compared_inputs", p.compared},
                   {"train_mean_s", p.train_mean},
                   {"train_std_s", p.train_std},
                   {"inputs", std::move(inputs)},
                   {"sensitive_functions", p.sensitive_functions}});
  }
  return out;
}

}  // namespace

int run_phases(const std::vector<std::string>& args)
{
  std::vector<std::string> inputs;
  std::string json_out, variability = "off";
  double nw = -1;
  int np = 0;
  std::uint64_t seed = 0;
  po::options_description options("phases options");
  options.add_options()
    ("input", po::value(&inputs)->required(),
     "model.json (with --nw and --np), or profile directories: the first is the training input, the others are "
     "compared with it phase by phase (input sensitivity)")
    ("nw", po::value(&nw), "a model's target workload size")
    ("np", po::value(&np), "a model's target number of ranks")
    ("variability", po::value(&variability)->default_value("off"), "a model's compute drawn at random: on or off, as predict")
    ("seed", po::value(&seed)->default_value(0), "the draws of --variability on")
    ("json", po::value(&json_out), "also write the units' phases to this file");
  po::positional_options_description positional;
  positional.add("input", -1);
  po::variables_map vm;
  if (not parse("phases", "phases model.json --nw X --np Y | phases PROFILE_DIR [PROFILE_DIR...]  [--json FILE]", args, options,
                positional, vm,
                "Reads every rank's calls once and prints the main loop's iterations (where the loop gives too\n"
                "few, the windows between collectives of every rank) grouped into phases, as\n"
                "`predict --sample` forms them (features: calls, bytes and work per function; k-means with the\n"
                "silhouette; docs/reference/sampling.md): each phase's share of the cost, its spread and the\n"
                "features that set it apart. For a profile the cost is the recorded time, for a model a proxy.\n"
                "With several profiles (the same program at other sizes), each phase of the first is tested for\n"
                "input sensitivity (the seed's Eq. 6: mean or spread of its units' time moved by more than 10 %).\n"
                "For a model, the test `gridcast fit` ran on its training profiles is printed too."))
    return 0;
  if (variability != "on" && variability != "off")
    throw UsageError{"--variability must be on or off, not '" + variability + "'", "phases"};

  models::sampling::Units units;
  std::vector<models::sampling::Units> references;
  std::vector<std::string> reference_names;
  std::string what;
  bool recorded = false;  // the cost is then the recorded time, not the allocation's proxy
  std::shared_ptr<const models::trace::TraceModel> model_of_input;  // a model's fit-time test is printed too
  const std::string& input = inputs.front();
  if (inputs.size() > 1) {
    for (const std::string& i : inputs)
      if (not models::is_profile_dir(i))
        throw UsageError{i + ": several inputs are compared as profile directories; this is none (no run.json)",
                         "phases"};
  }
  if (models::is_profile_dir(input)) {
    if (vm.count("nw") || vm.count("np") || not vm["variability"].defaulted() || not vm["seed"].defaulted())
      throw UsageError{"--nw, --np, --variability and --seed apply to a model, not to a profile directory", "phases"};
    models::ProfileDir dir(input);
    units = models::sampling::choose_units(dir, dir.info().host.speed_flops, true);
    what = input + " (recorded)";
    recorded = true;
    // The other sizes' units are cut as the first's: the same loop, or the same windows.
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      models::ProfileDir ref(inputs[i]);
      const double speed = ref.info().host.speed_flops;
      references.push_back(units.kind == models::sampling::UnitKind::Windows
                               ? models::sampling::collect_window_units(ref, speed)
                               : models::sampling::collect_recorded_units(ref, speed));
      if (references.back().count == 0)
        throw InputError({inputs[i], 0, {}, -1}, "no units to compare: " + references.back().why_not);
      reference_names.push_back(inputs[i]);
    }
  } else {
    if (vm.count("nw") == 0 || vm.count("np") == 0)
      throw UsageError{"a model needs --nw and --np (the target to synthesize)", "phases"};
    check_target_np(np, "phases");
    if (not(nw >= 0) || not std::isfinite(nw))
      throw UsageError{"--nw must be a finite number >= 0", "phases"};
    auto model = std::make_shared<const models::trace::TraceModel>(models::trace::read_model(input));
    for (const std::string& w : model_range_warnings(*model, nw, np))
      std::cerr << "gridcast phases: warning: " << w << '\n';
    models::trace::SynthOptions so;
    so.variability = variability == "on";
    so.seed = seed;
    models::trace::SynthSource synth(model, {nw, np}, so);
    check_call_count(synth.total_calls(), kDefaultMaxCalls, input, nw, np);  // every call is read once
    units = models::sampling::choose_units(synth, 0, false);
    std::ostringstream o;
    o << input << " at Nw " << nw << ", Np " << np;
    what = o.str();
    model_of_input = model;
  }

  nlohmann::ordered_json j;
  j["format"] = "gridcast-phases";
  j["format_version"] = 1;
  j["input"] = what;
  j["loop"] = units.loop;
  j["units"] = units.count;
  std::cout << "phases of " << what << '\n';
  // A unit set that cannot be sampled still has phases worth seeing; only a missing loop has none.
  if (units.count == 0) {
    std::cout << "no units: " << units.why_not << '\n';
    j["reason"] = units.why_not;
  } else {
    const models::sampling::Phases phases = models::sampling::form_phases(units);
    const std::vector<PhaseRow> rows = phase_rows(units, phases);
    double total = 0;
    for (const PhaseRow& r : rows)
      total += r.proxy_s;
    std::cout << units.count << " units ("
              << (units.kind == models::sampling::UnitKind::Windows ? "" : "iterations of ") << units.loop << "), " << phases.k
              << (phases.k == 1 ? " phase" : " phases") << " from " << phases.features.size() << " varying features\n";
    if (not units.why_not.empty())
      std::cout << "predict --sample would emulate every iteration: " << units.why_not << '\n';
    std::cout << "silhouette by k:";
    for (std::size_t k = 0; k < phases.silhouette.size(); ++k)
      std::cout << ' ' << k + 1 << '=' << std::fixed << std::setprecision(3) << phases.silhouette[k];
    std::cout << "\n\nphase  units  first  share of cost  mean cost (s)  spread (cv)  what sets it apart\n";
    nlohmann::ordered_json pj = nlohmann::ordered_json::array();
    for (std::size_t h = 0; h < rows.size(); ++h) {
      const PhaseRow& r = rows[h];
      const double share = total > 0 ? r.proxy_s / total : 0.0;
      std::cout << std::setw(5) << h << std::setw(7) << r.units << std::setw(7) << r.first_unit << std::setw(14)
                << std::fixed << std::setprecision(1) << 100 * share << " %" << std::setw(15) << std::scientific
                << std::setprecision(3) << r.proxy_mean_s << std::setw(13) << std::fixed << std::setprecision(3)
                << r.proxy_cv << "  " << joined(r.distinct) << '\n';
      pj.push_back({{"phase", h}, {"units", r.units}, {"first_unit", r.first_unit}, {"share", share},
                    {"mean_cost_s", r.proxy_mean_s}, {"cv", r.proxy_cv}, {"distinct_features", r.distinct}});
    }
    std::cout << "(cost: " << (recorded ? "the recorded time"
                                                                              : "the allocation's proxy")
              << " of the slowest rank, docs/reference/sampling.md)\n";
    j["sampleable"] = units.why_not.empty();
    j["reason"] = units.why_not;
    j["features"] = phases.features;
    j["silhouette"] = phases.silhouette;
    j["phases"] = std::move(pj);
    j["unit_phase"] = phases.of_unit;
    if (not references.empty())
      j["sensitivity"] = report_sensitivity(units, phases, references, reference_names);
  }
  if (model_of_input && model_of_input->input_phases) {
    std::cout << "\nfrom the fit's profiles (the training sizes' recorded iterations, not this target's):\n";
    print_input_phases(std::cout, *model_of_input, "");
    j["fit_input_phases"] = models::trace::model_to_json(*model_of_input)["input_phases"];
  }
  if (not json_out.empty()) {
    write_file_atomically(json_out, j.dump(2) + "\n", "the phases");
    std::cout << "wrote " << json_out << '\n';
  }
  return 0;
}

}  // namespace gridcast::cli
