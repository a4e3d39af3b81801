#include "gridcast/emulator/report.hpp"

#include "gridcast/foundation/csv.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/version.hpp"

#include <nlohmann/json.hpp>
#include <simgrid/version.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace gridcast::emulator {

namespace {

using ordered = nlohmann::ordered_json;

/// prediction.json's `sampling` (docs/reference/outputs.md).
ordered sampling_json(const SamplingReport& s)
{
  ordered o = ordered::object();
  o["applied"] = s.applied;
  o["reason"] = s.applied ? std::string() : s.why_not;
  o["loop"] = s.loop;
  o["loop_iterations"] = s.loop_iterations;
  o["units"] = s.units;
  o["mode"] = s.automatic ? "auto" : "size";
  o["note"] = s.note;
  o["features"] = s.features;
  o["silhouette"] = s.silhouette;
  ordered phases = ordered::array();
  for (std::size_t h = 0; h < s.phases.size(); ++h) {
    const SamplingReport::Phase& p = s.phases[h];
    phases.push_back({{"phase", h},
                      {"kind", p.transient ? "transient" : p.rare ? "rare" : "phase"},
                      {"units", p.units},
                      {"sampled", p.sampled},
                      {"mean_s", p.mean_s},
                      {"std_s", p.std_s},
                      {"share", p.share},
                      {"distinct_features", p.distinct}});
  }
  o["phases"] = std::move(phases);
  o["units_sampled"] = s.sampled;
  o["units_warm_up"] = s.warm_up;
  o["units_transient"] = s.transient;
  o["units_rare"] = s.rare;
  o["units_emulated"] = s.sampled + s.warm_up + s.transient + s.rare;
  o["confidence"] = s.confidence;
  o["margin"] = s.margin;
  if (s.applied) {
    const double makespan = s.estimate_s;
    o["estimate_s"] = makespan;
    o["standard_error_s"] = s.standard_error_s;
    o["degrees_of_freedom"] = std::isfinite(s.degrees_of_freedom) ? ordered(s.degrees_of_freedom) : ordered(nullptr);
    o["interval_s"] = {makespan - s.half_width_s, makespan + s.half_width_s};
    o["half_width_relative"] = makespan > 0 ? s.half_width_s / makespan : 0.0;
    o["margin_met"] = makespan > 0 && s.half_width_s <= s.margin * makespan;
    o["loop_estimate_s"] = s.loop_estimate_s;
    o["emulated_makespan_s"] = s.emulated_makespan_s;
    o["emulated_loop_s"] = s.emulated_loop_s;
    o["estimated_fields"] = "makespan_s, ranks' finish_s, compute_s, comm_s, wait_s, functions' seconds";
    o["emulated_units_only"] = "messages, links' bytes and utilisation, collectives' calls";
  }
  return o;
}

/// A number as prediction.json writes it (nlohmann's shortest text that reads back the same double).
std::string number(double v) { return nlohmann::json(v).dump(); }

void write_rank_table(const std::filesystem::path& file, const ReplayResult& result)
{
  OutputFile out(file, "the rank table");
  out.write("rank,host,compute_s,comm_s,wait_s,finish_s,calls\n");
  std::string line;
  for (const RankStats& r : result.ranks) {
    line = std::to_string(r.rank) + "," + csv_field(r.host) + "," + number(r.compute_s) + "," + number(r.comm_s) + "," +
           number(r.wait_s) + "," + number(r.finish_s) + "," + std::to_string(r.calls) + "\n";
    out.write(line);
  }
  out.commit();
}

void write_link_table(const std::filesystem::path& file, const ReplayResult& result)
{
  OutputFile out(file, "the link table");
  out.write("name,bytes,bandwidth_Bps,utilisation\n");
  for (const LinkStats& l : result.links)
    out.write(csv_field(l.name) + "," + number(l.bytes) + "," + number(l.bandwidth_Bps) + "," + number(l.utilisation) +
              "\n");
  out.commit();
}

/// min, mean and max of one field over the ranks.
template <class Get> ordered spread(const std::vector<RankStats>& ranks, Get get)
{
  double lo = 0, hi = 0, sum = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const double v = get(ranks[i]);
    lo = i == 0 ? v : std::min(lo, v);
    hi = i == 0 ? v : std::max(hi, v);
    sum += v;
  }
  return {{"min", lo}, {"mean", ranks.empty() ? 0.0 : sum / static_cast<double>(ranks.size())}, {"max", hi}};
}

/// The first kSummaryRows of `items` in `first` order, each written by `row`: a summary's in-full rows.
template <class T, class Row, class First> ordered top_rows(const std::vector<T>& items, Row row, First first)
{
  std::vector<const T*> order;
  for (const T& item : items)
    order.push_back(&item);
  const std::size_t n = std::min(kSummaryRows, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](const T* a, const T* b) { return first(*a, *b); });
  ordered out = ordered::array();
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(row(*order[i]));
  return out;
}

template <class Row> ordered rank_summary(const ReplayResult& result, Row row)
{
  const auto& ranks = result.ranks;
  ordered s;
  s["count"]     = ranks.size();
  s["compute_s"] = spread(ranks, [](const RankStats& r) { return r.compute_s; });
  s["comm_s"]    = spread(ranks, [](const RankStats& r) { return r.comm_s; });
  s["wait_s"]    = spread(ranks, [](const RankStats& r) { return r.wait_s; });
  s["finish_s"]  = spread(ranks, [](const RankStats& r) { return r.finish_s; });
  s["calls"]     = spread(ranks, [](const RankStats& r) { return static_cast<double>(r.calls); });
  s["slowest"] = top_rows(ranks, row, [](const RankStats& a, const RankStats& b) {
    return a.finish_s != b.finish_s ? a.finish_s > b.finish_s : a.rank < b.rank;
  });
  return s;
}

template <class Row> ordered link_summary(const ReplayResult& result, Row row)
{
  const auto& links = result.links;
  double bytes = 0;
  for (const LinkStats& l : links)
    bytes += l.bytes;
  ordered busiest = top_rows(links, row, [](const LinkStats& a, const LinkStats& b) {
    return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.name < b.name;
  });
  return {{"count", links.size()}, {"bytes", bytes}, {"busiest", std::move(busiest)}};
}

/// prediction.json's `functions`: calls and seconds per function, and what a skip extrapolated.
ordered functions_json(const ReplayResult& result)
{
  const bool skipped = (result.fast_forward && result.fast_forward->applied) ||
                       (result.sampling && result.sampling->applied);
  ordered functions = ordered::array();
  for (const auto& [name, f] : result.functions) {
    ordered fn{{"name", name}, {"calls", f.calls}, {"seconds", f.seconds}};
    if (skipped) {  // only then: outputs without a skip keep their bytes
      fn["extrapolated_calls"] = f.extrapolated_calls;
      fn["extrapolated_seconds"] = f.extrapolated_seconds;
    }
    functions.push_back(std::move(fn));
  }
  return functions;
}

/// prediction.json's `config`: the settings the run took, and where the GPU costs came from.
ordered config_json(const ReplayResult& result, const RunDescription& run)
{
  ordered config = ordered::object();
  if (run.options != nullptr) {
    config["seed"] = run.options->seed;
    config["eager_threshold_bytes"] = result.eager_threshold_bytes;
    config["envelope_bytes"] = result.envelope_bytes;
    config["envelope_from"] = result.envelope_source;
    config["test_cost_s"] = run.options->test_cost_s;
    config["iprobe_cost_s"] = run.options->iprobe_cost_s;
    ordered forced = ordered::object();
    for (const auto& [kind, name] : run.options->forced_algorithms)
      forced[std::string(collective_name(kind))] = name;
    config["forced_collectives"] = std::move(forced);
    config["coll_selector"] = std::string(collective_selector_name(run.options->coll_selector));
    if (not run.options->coll_selector_why.empty())
      config["coll_selector_why"] = run.options->coll_selector_why;
    if (run.options->local_copy != LocalCopyMode::Auto)  // the same: only when set
      config["coll_local_copy"] = run.options->local_copy == LocalCopyMode::On ? "on" : "off";
    ordered sg = ordered::array();
    for (const auto& [name, value] : run.options->simgrid_cfg)
      sg.push_back(name + ":" + value);
    config["simgrid_cfg"] = std::move(sg);
    // GPU buffers in MPI and the GPU runtime costs with where each came from (docs/guides/gpu.md).
    config["gpu_mpi"] = gpu_mpi_mode_name(run.options->gpu.mpi);
    config["nccl_algorithm"] = run.options->gpu.nccl_algorithm;
    config["gpu_pin_policy"] = run.options->gpu.pin_policy == PinPolicy::Cache ? "cache" : "call";
    ordered costs = ordered::object();
    for (const auto& [key, value] : result.gpu_costs)
      costs[key] = {{"seconds", value.first}, {"from", value.second}};
    config["gpu_costs"] = std::move(costs);
    if (run.options->gpu.kernel_model != "recorded") {  // only when set: outputs of other runs unchanged
      ordered unpriced = ordered::object();
      for (const auto& [name, launches] : result.gpu_unpriced_kernels)
        unpriced[name] = launches;
      config["gpu_model"] = {{"model", run.options->gpu.kernel_model},
                             {"gpu", run.options->gpu.kernel_model_gpu},
                             {"priced_launches", result.gpu_priced_launches},
                             {"unpriced_kernels", std::move(unpriced)}};
    }
  }
  if (run.options != nullptr && not run.options->what_if.empty())
    config["what_if"] = run.options->what_if;
  return config;
}

/// prediction.json's `calibration`: whether the platform's calibration reached the network model
/// (docs/reference/calibration-json.md).
ordered calibration_json(const ReplayResult& result)
{
  ordered cal = ordered::object();
  cal["factors_used"] = not result.lat_factor.empty() || not result.bw_factor.empty();
  cal["lat_factor"] = result.lat_factor;
  cal["bw_factor"] = result.bw_factor;
  cal["eager_threshold_from"] = result.eager_threshold_source;
  cal["calibration"] = result.calibration;
  if (not result.copy_overhead.empty())  // only then: outputs of platforms without it stay as they were
    cal["copy_overhead"] = result.copy_overhead;
  if (not result.local_copy_time.empty())  // the same: absent when collectives charged no local copy
    cal["coll_local_copy_time"] = result.local_copy_time;
  return cal;
}

/// prediction.json's `fast_forward`: what was skipped, or why nothing was.
ordered fast_forward_json(const FastForwardReport& ff, std::size_t ranks)
{
  ordered f = ordered::object();
  f["enabled"] = ff.options.mode == FastForwardOptions::Mode::Auto;
  f["applied"] = ff.applied;
  f["reason"] = ff.applied ? std::string() : ff.why_not;
  f["loop"] = ff.loop;
  f["loop_iterations"] = ff.loop_iterations;
  f["skip_from_iteration"] = ff.skip_from;
  f["iterations_skipped_per_rank"] = ff.skipped;
  f["iterations_emulated_per_rank"] = ff.loop_iterations - ff.skipped;
  f["iterations_skipped_total"] = ff.skipped * ranks;
  f["period_s"] = {{"min", ff.period_min_s}, {"mean", ff.period_mean_s}, {"max", ff.period_max_s}};
  f["skipped_s_total"] = ff.skipped_s;
  f["extrapolated_calls"] = ff.extrapolated_calls;
  f["extrapolated_messages"] = ff.extrapolated_messages;
  f["tolerance"] = ff.options.tolerance;
  f["window"] = ff.options.window;
  f["warmup"] = ff.options.warmup;
  f["tail"] = ff.options.tail;
  f["min_iterations"] = ff.options.min_iterations;
  return f;
}

/// prediction.json's `model_quality`: how many template positions the model holds exactly.
ordered model_quality_json(const models::trace::ModelQuality& q)
{
  ordered approximated = ordered::array();
  for (const models::trace::ApproximatedPosition& a : q.approximated)
    approximated.push_back(
        {{"where", a.where}, {"field", a.field}, {"method", a.method}, {"train_error", a.train_error}});
  return {{"positions", q.positions},
          {"exact_positions", q.exact},
          {"approximated", std::move(approximated)},
          {"extrapolation", {{"nw_factor", q.nw_factor}, {"np_factor", q.np_factor}}}};
}

/// prediction.json's `inputs`: every input file with its digest.
ordered inputs_json(const RunDescription& run)
{
  ordered inputs = ordered::array();
  for (const InputDigest& in : run.inputs) {
    ordered one = {{"role", in.role}, {"path", in.path}, {"sha1", in.sha1}};
    if (not in.paths_relative_to.empty())
      one["paths_relative_to"] = in.paths_relative_to;
    inputs.push_back(std::move(one));
  }
  return inputs;
}

}  // namespace

Tables parse_tables(const std::string& text, const std::string& option)
{
  if (text == "auto")
    return Tables::Auto;
  if (text == "json")
    return Tables::Json;
  if (text == "csv")
    return Tables::Csv;
  throw InputError({{}, 0, option, -1}, "'" + text + "': expected auto, json or csv");
}

void write_prediction(const std::filesystem::path& file, const ReplayResult& result, const RunDescription& run)
{
  ordered j;
  j["format"] = "gridcast-prediction";
  j["format_version"] = 1;
  j["command"] = run.command;
  j["makespan_s"] = result.makespan_s;
  j["events"] = result.events;
  j["messages"] = result.messages;
  if (result.unmatched_sends > 0) {  // absent when every send was received: outputs keep their bytes
    j["unmatched_sends"]      = result.unmatched_sends;
    j["first_unmatched_send"] = result.first_unmatched_send;
  }

  const bool csv = tables_in_csv(run.tables, result.ranks.size());
  auto rank_row = [](const RankStats& r) {
    return ordered{{"rank", r.rank},     {"host", r.host},         {"compute_s", r.compute_s}, {"comm_s", r.comm_s},
                   {"wait_s", r.wait_s}, {"finish_s", r.finish_s}, {"calls", r.calls}};
  };
  if (csv) {
    write_rank_table(file.parent_path() / "ranks.csv", result);
    j["ranks_table"]   = "ranks.csv";
    j["ranks_summary"] = rank_summary(result, rank_row);
  } else {
    ordered ranks = ordered::array();
    for (const RankStats& r : result.ranks)
      ranks.push_back(rank_row(r));
    j["ranks"] = std::move(ranks);
  }

  j["functions"] = functions_json(result);

  ordered collectives = ordered::object();
  for (const auto& [op, algos] : result.collectives) {
    ordered a = ordered::object();
    for (const auto& [name, count] : algos)
      a[name] = count;
    collectives[op] = std::move(a);
  }
  j["collectives"] = std::move(collectives);

  auto link_row = [](const LinkStats& l) {
    return ordered{{"name", l.name}, {"bytes", l.bytes}, {"bandwidth_Bps", l.bandwidth_Bps}, {"utilisation", l.utilisation}};
  };
  if (csv) {
    write_link_table(file.parent_path() / "links.csv", result);
    j["links_table"]   = "links.csv";
    j["links_summary"] = link_summary(result, link_row);
  } else {
    ordered links = ordered::array();
    for (const LinkStats& l : result.links)
      links.push_back(link_row(l));
    j["links"] = std::move(links);
  }

  j["config"] = config_json(result, run);
  j["calibration"] = calibration_json(result);

  if (result.fast_forward)
    j["fast_forward"] = fast_forward_json(*result.fast_forward, result.ranks.size());

  if (result.sampling)
    j["sampling"] = sampling_json(*result.sampling);

  if (run.model_quality != nullptr)
    j["model_quality"] = model_quality_json(*run.model_quality);

  j["versions"] = {{"gridcast", kVersion},
                   {"simgrid", std::to_string(SIMGRID_VERSION_MAJOR) + "." + std::to_string(SIMGRID_VERSION_MINOR) +
                                   (SIMGRID_VERSION_PATCH > 0 ? "." + std::to_string(SIMGRID_VERSION_PATCH) : "")}};
  j["inputs"] = inputs_json(run);

  write_file_atomically(file, j.dump(2) + "\n", "the prediction");
}

void write_analysis(const std::filesystem::path& file, const ReplayResult& result, const RunDescription& run)
{
  using ordered = nlohmann::ordered_json;
  ordered j;
  j["format"]         = "gridcast-analysis";
  j["format_version"] = 1;
  j["command"]        = run.command;
  j["makespan_s"]     = result.makespan_s;
  if (result.wait_states) {
    const WaitStateReport& w = *result.wait_states;
    ordered kinds = ordered::array();
    for (const auto& [kind, t] : w.by_kind)
      kinds.push_back({{"kind", wait_kind_name(kind)}, {"seconds", t.seconds}, {"calls", t.calls}});
    ordered ranks = ordered::array();
    for (std::size_t r = 0; r < w.by_rank.size(); ++r)
      ranks.push_back({{"rank", r}, {"seconds", w.by_rank[r].seconds}, {"calls", w.by_rank[r].calls}});
    ordered entries = ordered::array();
    for (const WaitEntry& e : w.entries)
      entries.push_back({{"rank", e.rank},
                         {"function", e.function},
                         {"kind", wait_kind_name(e.kind)},
                         {"seconds", e.total.seconds},
                         {"calls", e.total.calls}});
    j["wait_states"] = {{"total_s", w.total_s},
                        {"rank_time_s", w.rank_time_s},
                        {"by_kind", std::move(kinds)},
                        {"by_rank", std::move(ranks)},
                        {"entries", std::move(entries)}};
    if (w.critical_path) {
      const CriticalPath& p = *w.critical_path;
      ordered on_ranks = ordered::array();
      for (std::size_t r = 0; r < p.by_rank.size(); ++r)
        if (p.by_rank[r] > 0)
          on_ranks.push_back({{"rank", r}, {"seconds", p.by_rank[r]}});
      ordered on_functions = ordered::array();
      for (const auto& [f, seconds] : p.by_function)
        on_functions.push_back({{"function", f}, {"seconds", seconds}});
      ordered on_links = ordered::array();
      for (const auto& [link, seconds] : p.by_link)
        on_links.push_back({{"link", link}, {"seconds", seconds}});
      j["critical_path"] = {{"length_s", p.length_s},
                            {"end_rank", p.end_rank},
                            {"rank_changes", p.rank_changes},
                            {"by_rank", std::move(on_ranks)},
                            {"by_function", std::move(on_functions)},
                            {"by_link", std::move(on_links)}};
    }
    if (not w.iterations.empty()) {
      ordered iterations = ordered::array();
      for (const IterationImbalance& it : w.iterations)
        iterations.push_back({{"iteration", it.iteration},
                              {"mean_compute_s", it.mean_compute_s},
                              {"max_compute_s", it.max_compute_s},
                              {"max_rank", it.max_rank},
                              {"imbalance_s", it.imbalance_s()}});
      j["iterations"] = std::move(iterations);
      j["iterations_loop"] = w.iterations_loop;
    } else if (not w.iterations_note.empty()) {
      j["iterations_note"] = w.iterations_note;
    }
  }
  write_file_atomically(file, j.dump(2) + "\n", "the analysis");
}

void print_wait_states(std::ostream& out, const WaitStateReport& w, std::size_t top)
{
  auto old_flags     = out.flags();
  auto old_precision = out.precision();
  out << std::setprecision(4) << "wait states: " << w.total_s << " s in total, "
      << (w.rank_time_s > 0 ? 100.0 * w.total_s / w.rank_time_s : 0.0) << " % of the ranks' time\n";
  for (const auto& [kind, t] : w.by_kind)
    out << "  " << wait_kind_words(kind) << ": " << t.seconds << " s in " << t.calls << " call(s)\n";
  for (std::size_t i = 0; i < w.entries.size() && i < top; ++i) {
    const WaitEntry& e = w.entries[i];
    out << "  " << (i == 0 ? "most: " : "      ") << "rank " << e.rank << " " << e.function << ", "
        << wait_kind_words(e.kind) << ": " << e.total.seconds << " s in " << e.total.calls << " call(s)\n";
  }
  if (not w.iterations.empty()) {
    // Scalasca's load imbalance per iteration: the most loaded rank's compute over the mean.
    double sum = 0, mean_compute = 0;
    const IterationImbalance* worst = &w.iterations.front();
    for (const IterationImbalance& it : w.iterations) {
      sum += it.imbalance_s();
      mean_compute += it.mean_compute_s;
      if (it.imbalance_s() > worst->imbalance_s())
        worst = &it;
    }
    const double n = static_cast<double>(w.iterations.size());
    out << "  imbalance per iteration of " << w.iterations_loop << " (" << w.iterations.size() << " measured): ";
    // Each iteration's compute is a difference of running sums: a balanced loop leaves rounding (1e-19 s).
    if (worst->imbalance_s() <= 1e-9 * worst->mean_compute_s)
      out << "none, every rank's compute within 1e-9 of the mean in every iteration\n";
    else
      out << "most loaded rank's compute over the mean " << sum / n << " s ("
        << (mean_compute > 0 ? 100.0 * sum / mean_compute : 0.0) << " % of the mean), the largest "
        << worst->imbalance_s() << " s in iteration " << worst->iteration << " (rank " << worst->max_rank << ")\n";
  } else if (not w.iterations_note.empty()) {
    out << "  imbalance per iteration: not measured: " << w.iterations_note << '\n';
  }
  out.flags(old_flags);
  out.precision(old_precision);
}

void print_critical_path(std::ostream& out, const CriticalPath& p, double makespan_s, std::size_t top)
{
  auto old_flags     = out.flags();
  auto old_precision = out.precision();
  auto share         = [&](double s) { return p.length_s > 0 ? 100.0 * s / p.length_s : 0.0; };
  out << std::setprecision(9) << "critical path: " << p.length_s << " s (makespan " << makespan_s << " s), from rank "
      << p.end_rank << "'s end back through " << p.rank_changes << " rank change(s)\n"
      << std::setprecision(4);
  std::vector<std::pair<double, std::size_t>> ranks;
  for (std::size_t r = 0; r < p.by_rank.size(); ++r)
    if (p.by_rank[r] > 0)
      ranks.emplace_back(-p.by_rank[r], r);
  std::sort(ranks.begin(), ranks.end());
  out << "  on ranks:";
  for (std::size_t i = 0; i < ranks.size() && i < top; ++i)
    out << (i == 0 ? " " : ", ") << ranks[i].second << " " << share(-ranks[i].first) << " %";
  out << "\n  in functions:";
  for (std::size_t i = 0; i < p.by_function.size() && i < top; ++i)
    out << (i == 0 ? " " : ", ") << p.by_function[i].first << " " << share(p.by_function[i].second) << " %";
  out << '\n';
  if (not p.by_link.empty()) {
    out << "  over links (point-to-point calls, by their route's bottleneck):";
    for (std::size_t i = 0; i < p.by_link.size() && i < top; ++i)
      out << (i == 0 ? " " : ", ") << p.by_link[i].first << " " << share(p.by_link[i].second) << " %";
    out << '\n';
  }
  out.flags(old_flags);
  out.precision(old_precision);
}

void print_summary(std::ostream& out, const ReplayResult& result)
{
  double compute = 0, comm = 0, wait = 0;
  for (const RankStats& r : result.ranks) {
    compute += r.compute_s;
    comm += r.comm_s;
    wait += r.wait_s;
  }
  double n = result.ranks.empty() ? 1.0 : static_cast<double>(result.ranks.size());
  auto old_flags = out.flags();
  auto old_precision = out.precision();
  out << std::setprecision(9) << "makespan: " << result.makespan_s << " s\n";
  out << std::setprecision(4);
  out << "  ranks: " << result.ranks.size() << ", calls: " << result.events << ", messages: " << result.messages << '\n';
  out << "  mean per rank: compute " << compute / n << " s, communication " << comm / n << " s, waiting " << wait / n
      << " s\n";
  for (const auto& [op, algos] : result.collectives) {
    out << "  " << op << ":";
    for (const auto& [name, count] : algos)
      out << ' ' << name << " x" << count;
    out << '\n';
  }
  out.flags(old_flags);
  out.precision(old_precision);
}

}  // namespace gridcast::emulator
