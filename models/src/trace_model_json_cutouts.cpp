// model.json: the constructs cut out of the ranks' calls (numbered loops, binomial tree sequences, axis
// sweeps), and the fit's input-sensitivity test of the phases; written and read strictly. Format: docs/reference/model-json.md.
#include "trace_model_json_detail.hpp"

#include "gridcast/foundation/errors.hpp"

#include <array>
#include <string>

namespace gridcast::models::trace::json_detail {

ojson numbered_json(const NumberedLoop& l, const TraceModel& m)
{
  ojson o;
  o["placeholder"] = l.placeholder;
  o["fn"]          = m.tokens.at(l.placeholder).function;
  o["count"]       = formula_json(l.count);
  o["first_tag"]   = formula_json(l.first_tag);
  o["tag_step"]    = l.tag_step;
  o["from_end"]    = l.from_end;
  o["shift"]       = l.shift;
  ojson classes    = ojson::array();
  for (const auto& [cls, v] : l.rule.classes)
    classes.push_back(ojson{{"class", cls}, {"variant", v}});
  o["role"] = ojson{{"text", l.rule.text()}, {"role", l.rule.role.name()}, {"classifier", l.rule.classifier.name()},
                    {"classes", classes}};
  ojson variants = ojson::array();
  for (const auto& v : l.variants) {
    ojson calls = ojson::array();
    for (const NumberedCall& c : v) {
      ojson cj;
      cj["call"] = c.token;
      cj["fn"]   = m.tokens.at(c.token).function;
      if (c.peer)
        cj["peer"] = rank_json(*c.peer);
      if (c.bytes) {
        ojson b{{"text", c.bytes->text()}, {"base", formula_json(c.bytes->base)},
                {"slope", formula_json(c.bytes->slope)}};
        // Written only where present: a plain line keeps its bytes.
        if (c.bytes->cap)
          b["cap"] = formula_json(*c.bytes->cap);
        if (c.bytes->first)
          b["first"] = formula_json(*c.bytes->first);
        cj["bytes"] = b;
      }
      if (c.bytes_mode)
        cj["bytes_mode"] = formula_json(*c.bytes_mode);
      calls.push_back(cj);
    }
    variants.push_back(calls);
  }
  o["variants"] = variants;
  o["members"]  = l.members;
  return o;
}

ojson trees_json(const TreeSequence& t, const TraceModel& m)
{
  ojson o;
  o["placeholder"]   = t.placeholder;
  o["fn"]            = m.tokens.at(t.placeholder).function;
  o["powers_of_two"] = t.powers_of_two;
  ojson ops          = ojson::array();
  for (const TreeOp& op : t.ops)
    ops.push_back(ojson{{"tree", op.kind == TreeOp::Kind::Bcast ? "bcast" : "reduce"},
                        {"root", formula_json(op.root)},
                        {"tag", op.tag},
                        {"bytes", formula_json(op.bytes)},
                        {"send", op.send_token},
                        {"recv", op.recv_token}});
  o["trees"] = ops;
  return o;
}

/// The keys of an axis sweep's blocks, by extent class.
constexpr std::array<const char*, 3> kExtentKeys = {"extent_1", "extent_2", "extent_more"};

ojson sweep_json(const AxisSweep& a, const TraceModel& m)
{
  ojson o;
  o["placeholder"] = a.placeholder;
  o["fn"]          = m.tokens.at(a.placeholder).function;
  o["dims"]        = a.dims;
  for (std::size_t c = 0; c < 3; ++c) {
    if (not a.blocks[c]) {
      o[kExtentKeys[c]] = nullptr;  // no training grid had an axis of this class
      continue;
    }
    ojson calls = ojson::array();
    for (const AxisCall& call : *a.blocks[c]) {
      ojson cj;
      cj["call"] = call.token;
      cj["fn"]   = m.tokens.at(call.token).function;
      if (call.peer_dir != 0)
        cj["peer_dir"] = call.peer_dir;
      if (call.src_dir != 0)
        cj["src_dir"] = call.src_dir;
      if (call.bytes)
        cj["bytes"] = formula_json(*call.bytes);
      if (call.recv_bytes)
        cj["recv_bytes"] = formula_json(*call.recv_bytes);
      if (call.request_back != 0)
        cj["request_back"] = call.request_back;
      if (not call.requests_back.empty())
        cj["requests_back"] = call.requests_back;
      calls.push_back(cj);
    }
    o[kExtentKeys[c]] = calls;
  }
  return o;
}


/// A token index under `key` whose function must be `fn` (a model edited by hand stays consistent).
std::uint32_t read_token(const JsonObject& r, std::string_view key, const TraceModel& m)
{
  auto t = static_cast<std::uint32_t>(r.int32(key, 0, static_cast<std::int64_t>(m.tokens.size()) - 1));
  if (r.string("fn") != m.tokens[t].function)
    r.fail("fn", "'" + r.string("fn") + "' is not the function of token " + std::to_string(t) + " ('" +
                     m.tokens[t].function + "')");
  return t;
}

NumberedLoop read_numbered(const JsonObject& r, const TraceModel& m)
{
  r.only({"placeholder", "fn", "count", "first_tag", "tag_step", "from_end", "shift", "role", "variants", "members"});
  NumberedLoop l;
  l.placeholder = read_token(r, "placeholder", m);
  l.count       = read_formula(r.child("count"));
  l.first_tag   = read_formula(r.child("first_tag"));
  l.tag_step    = r.integer("tag_step", 1, 1LL << 30);
  l.from_end    = r.boolean("from_end");
  l.shift       = r.int32("shift", 0, 1);
  l.members     = r.strings("members");
  const json& variants = r.array("variants");
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const json& calls = variants[v];
    if (not calls.is_array())
      r.fail("variants[" + std::to_string(v) + "]", "expected an array of calls");
    std::vector<NumberedCall> out;
    for (std::size_t q = 0; q < calls.size(); ++q) {
      JsonObject c(calls[q], r.at({}).file, r.key_path("variants[" + std::to_string(v) + "][" + std::to_string(q) + "]"));
      c.only({"call", "fn", "peer", "bytes", "bytes_mode"});
      NumberedCall call;
      call.token = read_token(c, "call", m);
      const Op op = m.tokens[call.token].op;
      if (op != Op::Send && op != Op::Ssend && op != Op::Recv)
        c.fail("call", "a numbered loop holds blocking sends and receives only");
      if (c.has("peer"))
        call.peer = read_rank(c.child("peer"));
      if (c.has("bytes")) {
        JsonObject b = c.child("bytes");
        b.only({"text", "base", "slope", "cap", "first"});
        b.string("text");
        call.bytes = LoopFormula{read_formula(b.child("base")), read_formula(b.child("slope")), true, {}, {}};
        if (b.has("cap"))
          call.bytes->cap = read_formula(b.child("cap"));
        if (b.has("first"))
          call.bytes->first = read_formula(b.child("first"));
      }
      if (c.has("bytes_mode"))
        call.bytes_mode = read_formula(c.child("bytes_mode"));
      if (call.bytes.has_value() == call.bytes_mode.has_value())
        c.fail("bytes", "expected exactly one of \"bytes\" and \"bytes_mode\"");
      out.push_back(std::move(call));
    }
    l.variants.push_back(std::move(out));
  }
  JsonObject role = r.child("role");
  role.only({"text", "role", "classifier", "classes"});
  role.string("text");
  auto lr = LoopRole::from_name(role.string("role"));
  if (not lr)
    role.fail("role", "unknown loop role '" + role.string("role") + "'");
  auto cls = RankClassifier::from_name(role.string("classifier"));
  if (not cls)
    role.fail("classifier", "unknown rank classifier '" + role.string("classifier") + "'");
  l.rule.role       = *lr;
  l.rule.classifier = *cls;
  const json& classes = role.array("classes");
  for (std::size_t i = 0; i < classes.size(); ++i) {
    JsonObject c = role.element("classes", i);
    c.only({"class", "variant"});
    l.rule.classes.emplace_back(c.string("class"),
                                c.int32("variant", 0, static_cast<std::int64_t>(l.variants.size()) - 1));
  }
  std::sort(l.rule.classes.begin(), l.rule.classes.end());
  return l;
}

TreeSequence read_trees(const JsonObject& r, const TraceModel& m)
{
  r.only({"placeholder", "fn", "powers_of_two", "trees"});
  TreeSequence t;
  t.placeholder   = read_token(r, "placeholder", m);
  t.powers_of_two = r.boolean("powers_of_two");
  const json& ops = r.array("trees");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    JsonObject o = r.element("trees", i);
    o.only({"tree", "root", "tag", "bytes", "send", "recv"});
    TreeOp op;
    const std::string kind = o.string("tree");
    if (kind != "bcast" && kind != "reduce")
      o.fail("tree", "expected \"bcast\" or \"reduce\"");
    op.kind  = kind == "bcast" ? TreeOp::Kind::Bcast : TreeOp::Kind::Reduce;
    op.root  = read_formula(o.child("root"));
    op.tag   = o.int32("tag", 0);
    op.bytes = read_formula(o.child("bytes"));
    const auto last = static_cast<std::int64_t>(m.tokens.size()) - 1;
    op.send_token = static_cast<std::uint32_t>(o.int32("send", 0, last));
    op.recv_token = static_cast<std::uint32_t>(o.int32("recv", 0, last));
    if (m.tokens[op.send_token].op != Op::Send)
      o.fail("send", "token " + std::to_string(op.send_token) + " is not a send");
    if (m.tokens[op.recv_token].op != Op::Recv)
      o.fail("recv", "token " + std::to_string(op.recv_token) + " is not a receive");
    t.ops.push_back(std::move(op));
  }
  return t;
}

AxisSweep read_sweep(const JsonObject& r, const TraceModel& m)
{
  r.only({"placeholder", "fn", "dims", "extent_1", "extent_2", "extent_more"});
  AxisSweep a;
  a.placeholder = read_token(r, "placeholder", m);
  a.dims        = r.int32("dims", 3, 3);
  for (std::size_t c = 0; c < 3; ++c) {
    const char* key = kExtentKeys[c];
    if (r.need(key).is_null())
      continue;
    const std::size_t n = r.array(key).size();
    std::vector<AxisCall> calls;
    for (std::size_t i = 0; i < n; ++i) {
      JsonObject cj = r.element(key, i);
      cj.only({"call", "fn", "peer_dir", "src_dir", "bytes", "recv_bytes", "request_back", "requests_back"});
      AxisCall call;
      call.token = read_token(cj, "call", m);
      auto dir   = [&](const char* k) {
        if (not cj.has(k))
          return 0;
        const int d = cj.int32(k, -1, 1);
        if (d == 0)
          cj.fail(k, "expected -1 or 1 (leave the key out for a call without one)");
        return d;
      };
      call.peer_dir = dir("peer_dir");
      call.src_dir  = dir("src_dir");
      if (cj.has("bytes"))
        call.bytes = read_formula(cj.child("bytes"));
      if (cj.has("recv_bytes"))
        call.recv_bytes = read_formula(cj.child("recv_bytes"));
      if (cj.has("request_back"))
        call.request_back = cj.integer("request_back", 1);
      if (cj.has("requests_back"))
        call.requests_back = cj.integers("requests_back", 1);
      calls.push_back(std::move(call));
    }
    a.blocks[c] = std::move(calls);
  }
  return a;
}

ojson input_phases_json(const InputPhases& ip)
{
  ojson phases = ojson::array();
  for (const InputPhase& p : ip.phases)
    phases.push_back({{"share", p.share},
                      {"mean_s", p.mean_s},
                      {"std_s", p.std_s},
                      {"units", p.units},
                      {"sensitive", p.sensitive},
                      {"compared_inputs", p.compared_inputs},
                      {"sensitive_functions", p.sensitive_functions},
                      {"distinct_features", p.distinct}});
  return ojson{{"np", ip.np},           {"training_nw", ip.training_nw}, {"compared_nw", ip.compared_nw},
               {"loop", ip.loop},       {"units", ip.units},             {"phases", std::move(phases)}};
}

InputPhases read_input_phases(const JsonObject& r)
{
  r.only({"np", "training_nw", "compared_nw", "loop", "units", "phases"});
  InputPhases ip;
  ip.np = r.int32("np", 1);
  ip.training_nw = r.number("training_nw", JsonObject::Bound::NonNegative);
  ip.compared_nw = r.numbers("compared_nw");
  if (ip.compared_nw.empty())
    r.fail("compared_nw", "expected at least one size compared with the training size");
  ip.loop = r.string("loop");
  ip.units = r.uint64("units");
  const json& phases = r.array("phases");
  if (phases.empty())
    r.fail("phases", "expected at least one phase");
  for (std::size_t i = 0; i < phases.size(); ++i) {
    JsonObject pj = r.element("phases", i);
    pj.only({"share", "mean_s", "std_s", "units", "sensitive", "compared_inputs", "sensitive_functions",
             "distinct_features"});
    InputPhase p;
    p.share = pj.number("share", JsonObject::Bound::NonNegative);
    if (p.share > 1)
      pj.fail("share", "expected a share of the loop's time in [0, 1]");
    p.mean_s = pj.number("mean_s", JsonObject::Bound::NonNegative);
    p.std_s = pj.number("std_s", JsonObject::Bound::NonNegative);
    p.units = pj.uint64("units");
    p.sensitive = pj.boolean("sensitive");
    p.compared_inputs = pj.uint64("compared_inputs");
    if (p.compared_inputs > ip.compared_nw.size())
      pj.fail("compared_inputs", "more than the " + std::to_string(ip.compared_nw.size()) + " sizes compared");
    p.sensitive_functions = pj.strings("sensitive_functions");
    p.distinct = pj.strings("distinct_features");
    ip.phases.push_back(std::move(p));
  }
  return ip;
}

}  // namespace gridcast::models::trace::json_detail
