// model.json: writing (deterministic) and strict reading of the trace model. Format: docs/reference/model-json.md.
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/models/trace_model.hpp"
#include "trace_model_json_detail.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>

namespace gridcast::models::trace {

namespace json_detail {

constexpr const char* kFormatName = "gridcast-trace-model";

ojson formula_json(const Formula& f)
{
  ojson o;
  o["text"] = f.text();
  ojson terms = ojson::array();
  for (const Term& t : f.terms)
    terms.push_back(ojson{{"feature", feature_name(t.feature)}, {"coef", t.coef}});
  o["terms"]   = terms;
  o["integer"] = f.integer;
  o["cv_error"] = f.cv_error ? ojson(*f.cv_error) : ojson(nullptr);
  o["points"]  = f.points;
  if (f.period > 0)
    o["every"] = ojson{{"period", f.period}, {"part", f.remainder ? "remainder" : "blocks"}};
  return o;
}

ojson block_json(const BlockShare& b)
{
  ojson axes = ojson::array();
  for (const BlockShare::Axis& a : b.axes)
    axes.push_back(ojson{{"axis", a.axis}, {"cells_per_nw", a.cells_per_nw}});
  return ojson{{"text", b.text()}, {"dims", b.dims}, {"axes", axes}, {"coef", b.coef}};
}

ojson pricing_json(const LibraryPricing& l)
{
  return ojson{{"kernel", l.kernel},
               {"work", formula_json(l.work)},
               {"working_set_bytes", formula_json(l.working_set_bytes)},
               {"scale", l.scale}};
}

/// A float as the shortest decimal that reads back as the same float (forest thresholds and leaves).
double short_float(float f)
{
  std::array<char, 32> buf{};
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), f);
  return std::strtod(std::string(buf.data(), res.ptr).c_str(), nullptr);
}

ojson optional_number(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

ojson latency_json(const FunctionLatency& f)
{
  ojson o;
  o["function"]    = f.function;
  o["calls"]       = f.calls;
  o["sites"]       = f.sites;
  o["train_error"] = f.train_error;
  o["cv_error"]    = optional_number(f.cv_error);
  if (f.ratio) {
    ojson r;
    r["samples"]     = f.ratio_samples;
    r["train_error"] = optional_number(f.ratio_train_error);
    r["oob_error"]   = optional_number(f.ratio_oob_error);
    ojson trees      = ojson::array();
    for (const RatioForest::Tree& t : f.ratio->trees) {
      ojson nodes = ojson::array();
      for (const RatioForest::Node& n : t.nodes)
        nodes.push_back(ojson::array({n.feature, short_float(n.threshold), n.left, n.right}));
      ojson leaves = ojson::array();
      for (float v : t.leaves)
        leaves.push_back(short_float(v));
      trees.push_back(ojson{{"nodes", nodes}, {"leaves", leaves}});
    }
    r["trees"] = trees;
    o["ratio"] = r;
  } else {
    o["ratio"] = nullptr;
  }
  o["variability"] = f.variability.empty() ? ojson(nullptr) : ojson{{"edges", f.variability.edges}};
  return o;
}

ojson rank_json(const RankExpr& e)
{
  ojson o;
  o["expr"] = std::string(e.kind_name());
  o["text"] = e.text();
  switch (e.kind) {
    case RankExpr::Kind::Any: break;
    case RankExpr::Kind::XorLoop: o["level"] = e.level; break;
    case RankExpr::Kind::Cycle:
    case RankExpr::Kind::Rotate:
      o["a"]     = e.a;
      o["level"] = e.level;
      break;
    case RankExpr::Kind::Grid:
      o["a"]        = e.a;
      o["dims"]     = e.dims;
      o["dim"]      = e.dim;
      o["periodic"] = e.periodic;
      break;
    case RankExpr::Kind::GridCoords:
    case RankExpr::Kind::GridOrigin:
      o["a"]    = e.a;
      o["dims"] = e.dims;
      break;
    case RankExpr::Kind::GridOffset: {
      std::vector<int> offsets;
      for (int k = 0; k < e.dims; ++k)
        offsets.push_back(e.offset(k));
      o["offsets"]  = offsets;
      o["dims"]     = e.dims;
      o["periodic"] = e.periodic;
      break;
    }
    case RankExpr::Kind::GridTable: {
      ojson table = ojson::array();
      for (std::uint8_t code : e.table) {
        std::vector<int> offsets;
        for (int k = 0; k < e.dims; ++k)
          offsets.push_back(RankExpr::offset_in(code, k));
        table.push_back(offsets);
      }
      o["level"]    = e.level;
      o["dims"]     = e.dims;
      o["periodic"] = e.periodic;
      o["offsets"]  = std::move(table);
      break;
    }
    case RankExpr::Kind::GridLoop:
      o["a"]        = e.a;
      o["level"]    = e.level;
      o["dims"]     = e.dims;
      o["block"]    = e.block;
      o["reversed"] = e.reversed;
      o["all_axes"] = e.all_axes;
      o["there_and_back"] = e.there_and_back;
      o["periodic"] = e.periodic;
      break;
    default: o["a"] = e.a; break;
  }
  return o;
}

ojson approximations_json(const std::vector<Approximation>& list)
{
  ojson arr = ojson::array();
  for (const Approximation& a : list)
    arr.push_back(ojson{{"field", a.field}, {"method", a.method}, {"train_error", a.train_error}});
  return arr;
}

ojson nodes_json(const std::vector<TemplateNode>& nodes, const TraceModel& m)
{
  ojson arr = ojson::array();
  for (const TemplateNode& n : nodes) {
    ojson o;
    if (n.kind == RolledNode::Kind::Loop) {
      o["loop"]         = formula_json(n.count);
      o["nw_dependent"] = n.nw_dependent;
      if (not n.approximated.empty())
        o["approximated"] = approximations_json(n.approximated);
      o["body"]         = nodes_json(n.body, m);
      arr.push_back(o);
      continue;
    }
    const CallToken& t = m.tokens.at(n.token);
    if (n.kind == RolledNode::Kind::Poll) {
      o["poll"]  = n.token;
      o["fn"]    = t.function;
      o["count"] = formula_json(n.count);
      if (n.absorbed_flops)
        o["absorbed_flops"] = formula_json(*n.absorbed_flops);
      if (not n.absorbed_library.empty()) {
        ojson priced = ojson::array();
        for (const LibraryPricing& l : n.absorbed_library)
          priced.push_back(pricing_json(l));
        o["absorbed_library"] = std::move(priced);
      }
    } else {
      o["call"] = n.token;
      o["fn"]   = t.function;
    }
    if (n.peer)
      o["peer"] = rank_json(*n.peer);
    if (n.src)
      o["src"] = rank_json(*n.src);
    if (n.root)
      o["root"] = rank_json(*n.root);
    if (n.key)
      o["key"] = rank_json(*n.key);
    if (n.color)
      o["color"] = rank_json(*n.color);
    if (n.tag) {
      ojson tg;
      tg["expr"] = n.tag->kind == TagExpr::Kind::Fixed       ? "fixed"
                   : n.tag->kind == TagExpr::Kind::Loop      ? "loop"
                   : n.tag->kind == TagExpr::Kind::LoopFirst ? "loop_first"
                                                             : "affine";
      tg["text"] = n.tag->text();
      tg["a"]    = n.tag->a;
      if (n.tag->kind == TagExpr::Kind::Loop || n.tag->kind == TagExpr::Kind::LoopFirst) {
        tg["b"]     = n.tag->b;
        tg["level"] = n.tag->level;
      }
      if (n.tag->kind == TagExpr::Kind::LoopFirst)
        tg["first"] = n.tag->first;
      if (n.tag->kind == TagExpr::Kind::Affine) {
        ojson terms = ojson::array();
        for (const TagExpr::Term& t : n.tag->terms) {
          ojson tj;
          tj["level"]    = t.level;
          tj["b"]        = t.b;
          tj["from_end"] = t.from_end;
          terms.push_back(tj);
        }
        tg["terms"] = terms;
      }
      o["tag"] = tg;
    }
    if (n.tag_formula)
      o["tag_formula"] = formula_json(*n.tag_formula);
    if (n.bytes)
      o["bytes"] = formula_json(*n.bytes);
    if (n.recv_bytes)
      o["recv_bytes"] = formula_json(*n.recv_bytes);
    if (n.bytes_scale)
      o["bytes_scale"] = ojson{{"level", n.bytes_scale->level}, {"ratio", n.bytes_scale->ratio}};
    if (n.recv_bytes_scale)
      o["recv_bytes_scale"] = ojson{{"level", n.recv_bytes_scale->level}, {"ratio", n.recv_bytes_scale->ratio}};
    for (const auto& [key, ix] : {std::pair{"bytes_by_index", &n.bytes_by_index}, std::pair{"recv_bytes_by_index", &n.recv_bytes_by_index}})
      if (*ix) {
        ojson values = ojson::array();
        for (const Formula& f : (*ix)->values)
          values.push_back(formula_json(f));
        o[key] = ojson{{"level", (*ix)->level}, {"values", values}};
      }
    if (n.flops)
      o["flops"] = formula_json(*n.flops);
    if (n.root_work)
      o["root_work"] = ojson{{"root", formula_json(n.root_work->root)}, {"other", formula_json(n.root_work->other)}};
    if (n.role_scale)
      o["role_scale"] = ojson{{"first", n.role_scale->first}, {"last", n.role_scale->last}, {"middle", n.role_scale->middle}};
    for (const auto& [key, block] : {std::pair{"bytes_block", &n.bytes_block}, std::pair{"recv_bytes_block", &n.recv_bytes_block},
                                     std::pair{"flops_block", &n.flops_block}})
      if (*block)
        o[key] = block_json(**block);
    if (n.library)
      o["library"] = pricing_json(*n.library);
    if (n.seconds)
      o["seconds"] = formula_json(*n.seconds);
    if (n.counts)
      o["counts"] = formula_json(*n.counts);
    if (n.recv_counts)
      o["recv_counts"] = formula_json(*n.recv_counts);
    if (n.counts_self)
      o["counts_self"] = formula_json(*n.counts_self);
    if (n.recv_counts_self)
      o["recv_counts_self"] = formula_json(*n.recv_counts_self);
    if (n.comm_size)
      o["comm_size"] = formula_json(*n.comm_size);
    if (n.request_back != 0)
      o["request_back"] = n.request_back;
    if (not n.requests_back.empty())
      o["requests_back"] = n.requests_back;
    if (n.all_pending)
      o["all_pending"] = true;
    if (not n.approximated.empty())
      o["approximated"] = approximations_json(n.approximated);
    arr.push_back(o);
  }
  return arr;
}


// ---- strict reading --------------------------------------------------------------------------------------

/// A TagExpr: {"expr", "text", "a"[, "b", "level"][, "first"][, "terms": [{"level", "b", "from_end"}...]]}.
TagExpr read_tag(const JsonObject& tg)
{
  tg.only({"expr", "text", "a", "b", "level", "first", "terms"});
  TagExpr e;
  std::string kind = tg.string("expr");
  if (kind != "fixed" && kind != "loop" && kind != "loop_first" && kind != "affine")
    tg.fail("expr", "expected \"fixed\", \"loop\", \"loop_first\" or \"affine\"");
  e.kind = kind == "fixed"        ? TagExpr::Kind::Fixed
           : kind == "loop"       ? TagExpr::Kind::Loop
           : kind == "loop_first" ? TagExpr::Kind::LoopFirst
                                  : TagExpr::Kind::Affine;
  e.a    = tg.integer("a");
  if (e.kind == TagExpr::Kind::Loop || e.kind == TagExpr::Kind::LoopFirst) {
    e.b     = tg.integer("b");
    e.level = tg.int32("level", 0, 64);
  }
  if (e.kind == TagExpr::Kind::LoopFirst)
    e.first = tg.integer("first");
  if (e.kind == TagExpr::Kind::Affine) {
    const json& terms = tg.array("terms");
    for (std::size_t i = 0; i < terms.size(); ++i) {
      JsonObject tj = tg.element("terms", i);
      tj.only({"level", "b", "from_end"});
      e.terms.push_back({tj.int32("level", 0, 64), tj.integer("b"), tj.boolean("from_end")});
    }
    if (e.terms.empty())
      tg.fail("terms", "an affine tag has at least one term");
  }
  return e;
}

Formula read_formula(const JsonObject& r)
{
  r.only({"text", "terms", "integer", "cv_error", "points", "every"});
  Formula f;
  if (r.has("every")) {
    JsonObject e = r.child("every");
    e.only({"period", "part"});
    f.period = e.int32("period", 2, 1 << 20);
    const std::string part = e.string("part");
    if (part != "blocks" && part != "remainder")
      e.fail("part", "expected \"blocks\" or \"remainder\", not '" + part + "'");
    f.remainder = part == "remainder";
  }
  f.integer = r.boolean("integer");
  f.points  = r.int32("points", 0, 1 << 30);
  const json& cv = r.need("cv_error");
  if (not cv.is_null()) {
    if (not cv.is_number())
      r.fail("cv_error", "expected a number or null");
    f.cv_error = cv.get<double>();
  }
  const json& terms = r.array("terms");
  for (std::size_t i = 0; i < terms.size(); ++i) {
    JsonObject t = r.element("terms", i);
    t.only({"feature", "coef"});
    auto feat = feature_from_name(t.string("feature"));
    if (not feat)
      t.fail("feature", "unknown feature '" + t.string("feature") + "'");
    f.terms.push_back({*feat, t.number("coef")});
  }
  r.string("text");  // informative; must be a string
  return f;
}

/// An IndexedSize: {"level", "values": [formula...]} (two or more), beside the size it details (`has_mean`).
IndexedSize read_indexed(const JsonObject& r, bool has_mean)
{
  r.only({"level", "values"});
  if (not has_mean)
    r.fail("values", "sizes by index stand beside the size they detail (\"bytes\" or \"recv_bytes\")");
  IndexedSize out;
  out.level          = r.int32("level", 0, 64);
  const json& values = r.array("values");
  if (values.size() < 2)
    r.fail("values", "expected two or more formulas, one per index of the loop");
  for (std::size_t i = 0; i < values.size(); ++i)
    out.values.push_back(read_formula(r.element("values", i)));
  return out;
}

/// A BlockShare: {"dims", "axes": [{"axis", "cells_per_nw"}...], "coef", "text"}.
BlockShare read_block(const JsonObject& r, bool integer)
{
  r.only({"dims", "axes", "coef", "text"});
  BlockShare b;
  b.integer = integer;
  b.dims    = r.int32("dims", 1, 3);
  const std::size_t count = r.array("axes").size();
  if (count == 0)
    r.fail("axes", "a block share needs at least one axis");
  for (std::size_t i = 0; i < count; ++i) {
    JsonObject a = r.element("axes", i);
    a.only({"axis", "cells_per_nw"});
    BlockShare::Axis axis{a.int32("axis", 0, b.dims - 1), a.number("cells_per_nw", JsonObject::Bound::Positive)};
    if (not b.axes.empty() && axis.axis <= b.axes.back().axis)
      a.fail("axis", "axes must be given once each, in increasing order");
    b.axes.push_back(axis);
  }
  b.coef = r.number("coef", JsonObject::Bound::Positive);
  r.string("text");  // informative; must be a string
  return b;
}

std::optional<double> read_optional(const JsonObject& r, std::string_view key)
{
  const json& v = r.need(key);
  if (v.is_null())
    return std::nullopt;
  if (not v.is_number())
    r.fail(key, "expected a number or null");
  return v.get<double>();
}

FunctionLatency read_latency(const JsonObject& r)
{
  r.only({"function", "calls", "sites", "train_error", "cv_error", "ratio", "variability"});
  FunctionLatency f;
  f.function    = r.string("function");
  f.calls       = static_cast<std::uint64_t>(r.integer("calls"));
  f.sites       = r.int32("sites", 0, 1 << 30);
  f.train_error = r.number("train_error");
  f.cv_error    = read_optional(r, "cv_error");
  if (not r.need("ratio").is_null()) {
    JsonObject ratio = r.child("ratio");
    ratio.only({"samples", "train_error", "oob_error", "trees"});
    f.ratio_samples     = static_cast<std::size_t>(ratio.int32("samples", 0, 1 << 30));
    f.ratio_train_error = read_optional(ratio, "train_error");
    f.ratio_oob_error   = read_optional(ratio, "oob_error");
    RatioForest forest;
    const std::size_t trees = ratio.array("trees").size();
    if (trees == 0)
      ratio.fail("trees", "a forest needs at least one tree");
    for (std::size_t t = 0; t < trees; ++t) {
      JsonObject tr = ratio.element("trees", t);
      tr.only({"nodes", "leaves"});
      RatioForest::Tree tree;
      for (double l : tr.numbers("leaves"))
        tree.leaves.push_back(static_cast<float>(l));
      const json& nodes   = tr.array("nodes");
      const std::size_t n = nodes.size() + tree.leaves.size();
      for (std::size_t k = 0; k < nodes.size(); ++k) {
        const json& v = nodes[k];
        // [feature, threshold, left, right]; an index >= nodes is a leaf. Checked: a model.json must
        // not make the evaluation read out of bounds or loop.
        if (not v.is_array() || v.size() != 4 || not v[0].is_number_unsigned() || not v[1].is_number() ||
            not v[2].is_number_unsigned() || not v[3].is_number_unsigned() ||
            v[0].get<std::uint64_t>() >= CallContext::kFeatures || v[2].get<std::uint64_t>() >= n ||
            v[3].get<std::uint64_t>() >= n || v[2].get<std::uint64_t>() <= k || v[3].get<std::uint64_t>() <= k)
          tr.fail("nodes[" + std::to_string(k) + "]",
                  "expected [feature 0-4, threshold, left, right] with children after the node and inside the tree");
        tree.nodes.push_back({v[0].get<std::uint32_t>(), v[1].get<float>(), v[2].get<std::uint32_t>(),
                              v[3].get<std::uint32_t>()});
      }
      if (tree.leaves.empty())
        tr.fail("leaves", "a tree needs at least one leaf");
      forest.trees.push_back(std::move(tree));
    }
    f.ratio = std::move(forest);
  }
  if (not r.need("variability").is_null()) {
    JsonObject v = r.child("variability");
    v.only({"edges"});
    f.variability.edges = v.numbers("edges");
    if (f.variability.edges.size() < 2 || not std::is_sorted(f.variability.edges.begin(), f.variability.edges.end()))
      v.fail("edges", "expected at least two edges in increasing order");
  }
  return f;
}

RankExpr read_rank(const JsonObject& r)
{
  r.only({"expr", "text", "a", "level", "dims", "dim", "periodic", "block", "reversed", "all_axes", "there_and_back",
          "offsets"});
  auto kind = RankExpr::kind_from_name(r.string("expr"));
  if (not kind)
    r.fail("expr", "unknown rank expression '" + r.string("expr") + "'");
  RankExpr e;
  e.kind = *kind;
  constexpr std::int64_t kBig = 1LL << 30;
  if (r.has("a"))
    e.a = r.int32("a", -kBig, kBig);
  if (r.has("level"))
    e.level = r.int32("level", 0, 64);
  if (e.kind == RankExpr::Kind::Rotate && e.a < 0)
    r.fail("a", "the first rank of a rotate expression is 0 or more, not " + std::to_string(e.a));
  if (e.kind == RankExpr::Kind::Grid) {
    e.dims     = r.int32("dims", 1, 3);
    e.dim      = r.int32("dim", 0, e.dims - 1);
    e.periodic = r.boolean("periodic");
  }
  if (e.kind == RankExpr::Kind::GridCoords || e.kind == RankExpr::Kind::GridOrigin) {
    e.dims = r.int32("dims", 1, 3);
    e.a    = r.int32("a", 1, (1 << e.dims) - 1);  // the bit mask of the axes
  }
  // One offset of -1, 0 or +1 per axis of the grid; how many of them are not 0.
  auto read_offsets = [&](const json& of, std::vector<int>& offsets) {
    if (not of.is_array() || of.size() != static_cast<std::size_t>(e.dims))
      r.fail("offsets", "expected one offset per axis of the grid (" + std::to_string(e.dims) + ")");
    int moved = 0;
    for (const json& v : of) {
      if (not v.is_number_integer() || v.get<std::int64_t>() < -1 || v.get<std::int64_t>() > 1)
        r.fail("offsets", "each offset is -1, 0 or +1");
      offsets.push_back(v.get<int>());
      moved += offsets.back() != 0 ? 1 : 0;
    }
    return moved;
  };
  if (e.kind == RankExpr::Kind::GridOffset) {
    e.dims   = r.int32("dims", 2, 3);
    e.periodic = r.boolean("periodic");
    std::vector<int> offsets;
    if (read_offsets(r.array("offsets"), offsets) < 2)
      r.fail("offsets", "two offsets or more are not 0 (a neighbour along one axis is a grid expression)");
    e.a = RankExpr::offsets_code(offsets);
  }
  if (e.kind == RankExpr::Kind::GridTable) {
    e.dims     = r.int32("dims", 1, 3);
    e.periodic = r.boolean("periodic");
    e.level    = r.int32("level", 0, 64);
    const json& table = r.array("offsets");
    if (table.empty() || table.size() > RankExpr::kMaxTable)
      r.fail("offsets", "a table of 1 to " + std::to_string(RankExpr::kMaxTable) + " offsets");
    for (const json& entry : table) {
      std::vector<int> offsets;
      read_offsets(entry, offsets);
      e.table.push_back(static_cast<std::uint8_t>(RankExpr::offsets_code(offsets)));
    }
  }
  if (e.kind == RankExpr::Kind::GridLoop) {
    e.a        = r.int32("a", -1, 1);
    e.level    = r.int32("level", 0, 64);
    e.dims     = r.int32("dims", 1, 3);
    e.block    = r.int32("block", 1, 2);
    e.reversed = r.boolean("reversed");
    e.all_axes = r.boolean("all_axes");
    e.there_and_back = r.boolean("there_and_back");
    e.periodic = r.boolean("periodic");
    if (e.a != 1 && e.a != -1)
      r.fail("a", "the direction of a grid_loop neighbour is +1 or -1, not " + std::to_string(e.a));
  }
  return e;
}

/// A position's "approximated" list (absent: none).
std::vector<Approximation> read_approximations(const JsonObject& node)
{
  std::vector<Approximation> out;
  if (not node.has("approximated"))
    return out;
  const std::size_t count = node.array("approximated").size();
  for (std::size_t i = 0; i < count; ++i) {
    JsonObject r = node.element("approximated", i);
    r.only({"field", "method", "train_error"});
    Approximation a;
    a.field       = r.string("field");
    a.method      = r.string("method");
    a.train_error = r.number("train_error");
    if (not(a.train_error >= 0) || not std::isfinite(a.train_error))
      r.fail("train_error", "a relative training error is a finite number >= 0");
    out.push_back(std::move(a));
  }
  return out;
}

/// A library call's pricing (a position's "library", an entry of a construct's "absorbed_library"); its
/// kernel must have a rate curve in the model's top-level "library".
LibraryPricing read_pricing(JsonObject lib, const TraceModel& m)
{
  lib.only({"kernel", "work", "working_set_bytes", "scale"});
  LibraryPricing pricing{lib.string("kernel"), read_formula(lib.child("work")), read_formula(lib.child("working_set_bytes")),
                         lib.number("scale", JsonObject::Bound::Positive)};
  if (not m.library_rates.contains(pricing.kernel))
    lib.fail("kernel", "no rate curve for " + pricing.kernel + " in the model's \"library\"");
  return pricing;
}

/// The template nodes in the array under `key` of `parent`.
std::vector<TemplateNode> read_nodes(const JsonObject& parent, std::string_view key, const TraceModel& m)
{
  std::vector<TemplateNode> out;
  const std::size_t count = parent.array(key).size();
  for (std::size_t i = 0; i < count; ++i) {
    JsonObject r = parent.element(key, i);
    TemplateNode n;
    if (r.has("loop")) {
      r.only({"loop", "nw_dependent", "approximated", "body"});
      n.kind         = RolledNode::Kind::Loop;
      n.count        = read_formula(r.child("loop"));
      n.nw_dependent = r.boolean("nw_dependent");
      n.approximated = read_approximations(r);
      n.body         = read_nodes(r, "body", m);
      out.push_back(std::move(n));
      continue;
    }
    r.only({"call", "poll", "fn", "count", "absorbed_flops", "absorbed_library", "peer", "src", "root", "key", "color", "tag", "tag_formula", "bytes", "recv_bytes", "bytes_scale", "recv_bytes_scale", "bytes_by_index", "recv_bytes_by_index", "flops", "role_scale", "bytes_block", "recv_bytes_block", "flops_block", "root_work", "library", "seconds", "counts",
            "recv_counts", "counts_self", "recv_counts_self", "comm_size", "request_back", "requests_back", "all_pending",
            "approximated"});
    const char* tkey = r.has("poll") ? "poll" : "call";
    n.kind  = r.has("poll") ? RolledNode::Kind::Poll : RolledNode::Kind::Call;
    n.token = static_cast<std::uint32_t>(r.int32(tkey, 0, static_cast<std::int64_t>(m.tokens.size()) - 1));
    if (r.string("fn") != m.tokens[n.token].function)
      r.fail("fn", "'" + r.string("fn") + "' is not the function of token " + std::to_string(n.token) + " ('" +
                       m.tokens[n.token].function + "')");
    if (n.kind == RolledNode::Kind::Poll)
      n.count = read_formula(r.child("count"));
    if (r.has("absorbed_flops")) {
      if (n.kind != RolledNode::Kind::Poll)
        r.fail("absorbed_flops", "only a polling construct (\"poll\") absorbs compute");
      n.absorbed_flops = read_formula(r.child("absorbed_flops"));
    }
    if (r.has("absorbed_library")) {
      if (not n.absorbed_flops)
        r.fail("absorbed_library", "only a polling construct with \"absorbed_flops\" prices absorbed library calls");
      const std::size_t count = r.array("absorbed_library").size();
      for (std::size_t i = 0; i < count; ++i)
        n.absorbed_library.push_back(read_pricing(r.element("absorbed_library", i), m));
    }
    if (r.has("peer"))
      n.peer = read_rank(r.child("peer"));
    if (r.has("src"))
      n.src = read_rank(r.child("src"));
    if (r.has("root"))
      n.root = read_rank(r.child("root"));
    if ((m.tokens[n.token].key == kVaryingKey) != r.has("key"))
      r.fail("key", "a position has a key expression exactly when its token's key is \"varies\"");
    if (r.has("key"))
      n.key = read_rank(r.child("key"));
    if ((m.tokens[n.token].color == kVaryingColor) != r.has("color"))
      r.fail("color", "a position has a color expression exactly when its token's color is \"varies\"");
    if (r.has("color"))
      n.color = read_rank(r.child("color"));
    if ((m.tokens[n.token].tag == kVaryingTag) != (r.has("tag") != r.has("tag_formula")))
      r.fail("tag", "a position has a tag expression (\"tag\" or \"tag_formula\", not both) exactly when its "
                    "token's tag is \"varies\"");
    if (r.has("tag_formula"))
      n.tag_formula = read_formula(r.child("tag_formula"));
    if (r.has("tag"))
      n.tag = read_tag(r.child("tag"));
    if (r.has("bytes"))
      n.bytes = read_formula(r.child("bytes"));
    if (r.has("recv_bytes"))
      n.recv_bytes = read_formula(r.child("recv_bytes"));
    auto read_scale = [](JsonObject j) {
      j.only({"level", "ratio"});
      return IterationScale{j.int32("level", 0, 64), j.number("ratio", JsonObject::Bound::Positive)};
    };
    if (r.has("bytes_scale"))
      n.bytes_scale = read_scale(r.child("bytes_scale"));
    if (r.has("recv_bytes_scale"))
      n.recv_bytes_scale = read_scale(r.child("recv_bytes_scale"));
    if (r.has("bytes_by_index"))
      n.bytes_by_index = read_indexed(r.child("bytes_by_index"), n.bytes.has_value());
    if (r.has("recv_bytes_by_index"))
      n.recv_bytes_by_index = read_indexed(r.child("recv_bytes_by_index"), n.recv_bytes.has_value());
    if (r.has("flops"))
      n.flops = read_formula(r.child("flops"));
    if (r.has("role_scale")) {
      if (m.tokens[n.token].op != Op::Compute || not n.flops)
        r.fail("role_scale", "only a compute position with \"flops\" has role factors");
      JsonObject rs = r.child("role_scale");
      rs.only({"first", "last", "middle"});
      using B       = JsonObject::Bound;
      n.role_scale = RoleScale{rs.number("first", B::NonNegative), rs.number("last", B::NonNegative),
                               rs.number("middle", B::NonNegative)};
    }
    if (r.has("bytes_block"))
      n.bytes_block = read_block(r.child("bytes_block"), true);
    if (r.has("recv_bytes_block"))
      n.recv_bytes_block = read_block(r.child("recv_bytes_block"), true);
    if (r.has("flops_block")) {
      if (m.tokens[n.token].op != Op::Compute || not n.flops)
        r.fail("flops_block", "only a compute position with \"flops\" has work per block");
      n.flops_block = read_block(r.child("flops_block"), false);
    }
    if (r.has("root_work")) {
      if (m.tokens[n.token].op != Op::Compute || not n.flops)
        r.fail("root_work", "only a compute position with \"flops\" has a root's work");
      JsonObject rw = r.child("root_work");
      rw.only({"root", "other"});
      n.root_work = TemplateNode::RootWork{read_formula(rw.child("root")), read_formula(rw.child("other"))};
    }
    if (r.has("library"))
      n.library = read_pricing(r.child("library"), m);
    if (r.has("seconds"))
      n.seconds = read_formula(r.child("seconds"));
    if (r.has("counts"))
      n.counts = read_formula(r.child("counts"));
    if (r.has("recv_counts"))
      n.recv_counts = read_formula(r.child("recv_counts"));
    if (r.has("counts_self"))
      n.counts_self = read_formula(r.child("counts_self"));
    if (r.has("recv_counts_self"))
      n.recv_counts_self = read_formula(r.child("recv_counts_self"));
    if (r.has("comm_size"))
      n.comm_size = read_formula(r.child("comm_size"));
    if (r.has("request_back"))
      n.request_back = r.integer("request_back");
    if (r.has("requests_back"))
      n.requests_back = r.integers("requests_back");
    if (r.has("all_pending"))
      n.all_pending = r.boolean("all_pending");
    n.approximated = read_approximations(r);
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace json_detail

using namespace json_detail;

namespace {

bool uses_feature(const Formula& f, std::size_t feature)
{
  return std::any_of(f.terms.begin(), f.terms.end(), [&](const Term& t) { return t.feature == feature; });
}
bool uses_feature(const std::optional<Formula>& f, std::size_t feature) { return f && uses_feature(*f, feature); }
bool uses_feature(const LibraryPricing& l, std::size_t feature)
{
  return uses_feature(l.work, feature) || uses_feature(l.working_set_bytes, feature);
}

bool uses_feature(const std::vector<TemplateNode>& nodes, std::size_t feature)
{
  for (const TemplateNode& n : nodes)
    if (uses_feature(n.count, feature) || uses_feature(n.bytes, feature) || uses_feature(n.recv_bytes, feature) ||
        uses_feature(n.flops, feature) || uses_feature(n.absorbed_flops, feature) || uses_feature(n.seconds, feature) ||
        (n.library && uses_feature(*n.library, feature)) ||
        std::any_of(n.absorbed_library.begin(), n.absorbed_library.end(),
                    [&](const LibraryPricing& l) { return uses_feature(l, feature); }) ||
        uses_feature(n.counts, feature) || uses_feature(n.recv_counts, feature) ||
        uses_feature(n.counts_self, feature) || uses_feature(n.recv_counts_self, feature) || uses_feature(n.comm_size, feature) ||
        uses_feature(n.tag_formula, feature) || uses_feature(n.body, feature))
      return true;
  return false;
}

/// Whether a template formula of `m` reads `feature` (only loop counts can read the grid-shape ones).
bool uses_feature(const TraceModel& m, std::size_t feature)
{
  return std::any_of(m.groups.begin(), m.groups.end(), [&](const TraceGroup& g) { return uses_feature(g.body, feature); });
}

}  // namespace

nlohmann::ordered_json model_to_json(const TraceModel& m)
{
  ojson o;
  o["format"]         = kFormatName;
  o["format_version"] = TraceModel::kFormatVersion;
  o["group_threshold"] = m.group_threshold;
  // The regression's candidates; the grid-shape features only where a formula of the model uses one
  // (models without them read as before).
  ojson feats = ojson::array();
  for (std::size_t f = 0; f < feature_count(); ++f)
    if (f < first_grid_feature() || uses_feature(m, f))
      feats.push_back(feature_name(f));
  o["features"] = feats;
  ojson training = ojson::array();
  for (const TrainingPoint& t : m.training) {
    ojson point{{"profile", t.profile}, {"nw", t.nw}, {"np", t.np}};
    if (not t.mpi_library.empty())
      point["mpi_library"] = t.mpi_library;
    training.push_back(std::move(point));
  }
  o["training"] = training;
  ojson tokens = ojson::array();
  for (const CallToken& t : m.tokens) {
    ojson tj;
    tj["function"] = t.function;
    tj["op"]       = std::string(op_name(t.op));
    if (t.tag == kVaryingTag)
      tj["tag"] = "varies";
    else if (t.tag != 0)
      tj["tag"] = t.tag;
    if (t.recv_tag == kVaryingTag)
      tj["recv_tag"] = "varies";
    else if (t.recv_tag != 0)
      tj["recv_tag"] = t.recv_tag;
    if (t.comm != kWorldComm)
      tj["comm"] = t.comm;
    if (t.color == kVaryingColor)
      tj["color"] = "varies";
    else if (t.color != 0)
      tj["color"] = t.color;
    if (t.key == kVaryingKey)
      tj["key"] = "varies";
    else if (t.key != 0)
      tj["key"] = t.key;
    if (t.new_comm != kWorldComm)
      tj["new_comm"] = t.new_comm;
    if (t.nonblocking)  // written only when set: models without nonblocking collectives keep their bytes
      tj["nonblocking"] = true;
    tokens.push_back(tj);
  }
  o["tokens"] = tokens;
  ojson classes = ojson::array();
  for (const auto& [cls, g] : m.rule.classes)
    classes.push_back(ojson{{"class", cls}, {"group", g}});
  o["rule"] = ojson{{"classifier", m.rule.classifier.name()}, {"classes", classes}};
  ojson groups = ojson::array();
  for (std::size_t g = 0; g < m.groups.size(); ++g) {
    const TraceGroup& grp = m.groups[g];
    groups.push_back(ojson{{"id", g},
                           {"members", grp.members},
                           {"approximate_members", grp.approximate_members},
                           {"template", nodes_json(grp.body, m)}});
  }
  o["groups"]   = groups;
  // Only where a site is priced from its arguments: other models keep their bytes.
  if (not m.library_rates.empty()) {
    ojson rates = ojson::object();
    for (const auto& [kernel, curve] : m.library_rates) {
      ojson points = ojson::array();
      for (const KernelRatePoint& p : curve)
        points.push_back(ojson::array({p.working_set_bytes, p.rate}));
      rates[kernel] = points;
    }
    o["library"] = ojson{{"speed_flops", m.library_speed_flops}, {"rates", rates}};
  }
  ojson latency = ojson::array();
  for (const FunctionLatency& f : m.latency)
    latency.push_back(latency_json(f));
  o["latency"]  = latency;
  o["warnings"] = m.warnings;
  if (not m.size_class.empty())
    o["size_class"] = m.size_class;
  // Only where there are some: models without numbered loops keep their bytes.
  if (not m.numbered.empty()) {
    ojson numbered = ojson::array();
    for (const NumberedLoop& l : m.numbered)
      numbered.push_back(numbered_json(l, m));
    o["numbered_loops"] = numbered;
  }
  if (not m.trees.empty()) {
    ojson trees = ojson::array();
    for (const TreeSequence& t : m.trees)
      trees.push_back(trees_json(t, m));
    o["tree_sequences"] = trees;
  }
  if (not m.axis_sweeps.empty()) {
    ojson sweeps = ojson::array();
    for (const AxisSweep& a : m.axis_sweeps)
      sweeps.push_back(sweep_json(a, m));
    o["axis_sweeps"] = sweeps;
  }
  if (m.input_phases)
    o["input_phases"] = input_phases_json(*m.input_phases);
  return o;
}


TraceModel model_from_json(const nlohmann::json& j, const std::string& file)
{
  JsonObject top(j, file);
  top.only({"format", "format_version", "group_threshold", "features", "training", "tokens", "rule", "groups",
            "library", "latency", "warnings", "size_class", "numbered_loops", "tree_sequences", "axis_sweeps",
            "input_phases"});
  if (top.string("format") != kFormatName)
    top.fail("format", std::string("expected \"") + kFormatName + "\"");
  if (top.integer("format_version") != TraceModel::kFormatVersion)
    top.fail("format_version", "model written by another gridcast version (format_version " +
                                   std::to_string(top.integer("format_version")) + "; this gridcast reads version " +
                                   std::to_string(TraceModel::kFormatVersion) +
                                   "): fit it again with this gridcast (`gridcast fit`)");
  TraceModel m;
  m.group_threshold = top.number("group_threshold");
  top.array("features");  // informative
  const json& training = top.array("training");
  for (std::size_t i = 0; i < training.size(); ++i) {
    JsonObject t = top.element("training", i);
    t.only({"profile", "nw", "np", "mpi_library"});
    TrainingPoint point{t.string("profile"), t.number("nw"), t.int32("np", 1, 1 << 30), {}};
    if (t.has("mpi_library"))
      point.mpi_library = t.string("mpi_library");
    m.training.push_back(std::move(point));
  }
  const json& tokens = top.array("tokens");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    JsonObject t = top.element("tokens", i);
    t.only({"function", "op", "tag", "recv_tag", "comm", "color", "key", "new_comm", "nonblocking"});
    CallToken tok;
    tok.function = t.string("function");
    auto op      = op_from_name(t.string("op"));
    if (not op)
      t.fail("op", "unknown op '" + t.string("op") + "'");
    tok.op = *op;
    constexpr std::int64_t lo = INT32_MIN, hi = INT32_MAX;
    // A token field that is an integer, or "varies" (the sentinel: a parameter of each position).
    auto integer_or_varies = [&](const char* key, std::int32_t varies, std::int32_t& field) {
      if (not t.has(key))
        return;
      if (t.need(key).is_string()) {
        if (t.string(key) != "varies")
          t.fail(key, "expected an integer or \"varies\"");
        field = varies;
      } else {
        field = t.int32(key, lo + 1, hi);
      }
    };
    integer_or_varies("tag", kVaryingTag, tok.tag);
    // "varies": a sendrecv's receive tag is its tag, fitted per position with it.
    integer_or_varies("recv_tag", kVaryingTag, tok.recv_tag);
    if (tok.recv_tag == kVaryingTag && (tok.tag != kVaryingTag || tok.op != Op::Sendrecv))
      t.fail("recv_tag", "\"varies\" only for a sendrecv whose tag varies (the receive tag is then the tag)");
    if (t.has("comm"))
      tok.comm = t.int32("comm", lo, hi);
    integer_or_varies("color", kVaryingColor, tok.color);
    integer_or_varies("key", kVaryingKey, tok.key);
    if (t.has("new_comm"))
      tok.new_comm = t.int32("new_comm", lo, hi);
    if (t.has("nonblocking")) {
      tok.nonblocking = t.boolean("nonblocking");
      if (tok.nonblocking && not is_collective(tok.op))
        t.fail("nonblocking", "only a collective op can be nonblocking (op '" + t.string("op") +
                                  "'; isend and irecv are ops of their own)");
    }
    m.tokens.push_back(tok);
  }
  if (top.has("library")) {  // read before the templates, whose priced sites name its kernels
    JsonObject lib = top.child("library");
    lib.only({"speed_flops", "rates"});
    m.library_speed_flops = lib.number("speed_flops", JsonObject::Bound::Positive);
    JsonObject rates      = lib.child("rates");
    for (const auto& item : lib.need("rates").items()) {
      KernelRateCurve& curve = m.library_rates[item.key()];
      const json& points     = rates.array(item.key());
      for (std::size_t i = 0; i < points.size(); ++i) {
        const json& p = points[i];
        if (not p.is_array() || p.size() != 2 || not p[0].is_number() || not p[1].is_number() ||
            not(p[0].get<double>() > 0) || not(p[1].get<double>() > 0) ||
            (not curve.empty() && not(p[0].get<double>() > curve.back().working_set_bytes)))
          rates.fail(item.key(), "point " + std::to_string(i) +
                                     ": expected [working_set_bytes, rate], both > 0, sizes ascending strictly");
        curve.push_back({p[0].get<double>(), p[1].get<double>()});
      }
      if (curve.empty())
        rates.fail(item.key(), "expected at least one point");
    }
  }
  const json& groups = top.array("groups");
  JsonObject rule = top.child("rule");
  rule.only({"classifier", "classes"});
  auto cls = RankClassifier::from_name(rule.string("classifier"));
  if (not cls)
    rule.fail("classifier", "unknown rank classifier '" + rule.string("classifier") + "'");
  m.rule.classifier   = *cls;
  const json& classes = rule.array("classes");
  for (std::size_t i = 0; i < classes.size(); ++i) {
    JsonObject c = rule.element("classes", i);
    c.only({"class", "group"});
    m.rule.classes.emplace_back(c.string("class"), c.int32("group", 0, static_cast<std::int64_t>(groups.size()) - 1));
  }
  std::sort(m.rule.classes.begin(), m.rule.classes.end());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    JsonObject g = top.element("groups", i);
    g.only({"id", "members", "approximate_members", "template"});
    if (g.integer("id") != static_cast<std::int64_t>(i))
      g.fail("id", "groups must be numbered 0, 1, 2... in order");
    TraceGroup grp;
    grp.members = g.strings("members");
    grp.approximate_members = static_cast<std::uint64_t>(g.int32("approximate_members", 0, 1 << 30));
    grp.body = read_nodes(g, "template", m);
    m.groups.push_back(std::move(grp));
  }
  const json& latency = top.array("latency");
  for (std::size_t i = 0; i < latency.size(); ++i)
    m.latency.push_back(read_latency(top.element("latency", i)));
  m.warnings = top.strings("warnings");
  if (top.has("size_class"))
    m.size_class = top.string("size_class");
  if (top.has("numbered_loops")) {
    const json& loops = top.array("numbered_loops");
    for (std::size_t i = 0; i < loops.size(); ++i)
      m.numbered.push_back(read_numbered(top.element("numbered_loops", i), m));
  }
  if (top.has("tree_sequences")) {
    const json& seqs = top.array("tree_sequences");
    for (std::size_t i = 0; i < seqs.size(); ++i)
      m.trees.push_back(read_trees(top.element("tree_sequences", i), m));
  }
  if (top.has("axis_sweeps")) {
    const json& sweeps = top.array("axis_sweeps");
    for (std::size_t i = 0; i < sweeps.size(); ++i)
      m.axis_sweeps.push_back(read_sweep(top.element("axis_sweeps", i), m));
  }
  if (top.has("input_phases"))
    m.input_phases = read_input_phases(top.child("input_phases"));
  return m;
}

void write_model(const std::filesystem::path& file, const TraceModel& model)
{
  write_file_atomically(file, model_to_json(model).dump(2) + "\n", "the model");
}

TraceModel read_model(const std::filesystem::path& file)
{
  return model_from_json(read_json_file(file, "the model"), file.string());
}

}  // namespace gridcast::models::trace
