#include "server/compat/graphql_exec.h"

#include <charconv>
#include <map>
#include <set>
#include <unordered_map>

namespace cohort::compat::gql {

// Ordered map of response key -> the selections merged under it.
struct Grouped {
  std::vector<std::pair<std::string, std::vector<const Selection*>>> items;
  std::unordered_map<std::string, size_t> index;  // response key -> position in items

  void Add(const std::string& key, const Selection* s) {
    auto [it, inserted] = index.emplace(key, items.size());
    if (inserted) {
      items.emplace_back(key, std::vector<const Selection*>{s});
    } else {
      items[it->second].second.push_back(s);
    }
  }
  bool empty() const { return items.empty(); }
  auto begin() const { return items.begin(); }
  auto end() const { return items.end(); }
};

class Executor {
 public:
  Executor(const ExecRequest& req, const Operation& op, const ExecLimits& limits)
      : req_(req), op_(op), limits_(limits) {}

  // The operation's top-level fields once collected; an error when collecting them failed.
  Result<size_t> CountTopLevelFields() {
    Grouped fields;
    std::set<std::string> active;
    CollectInto(op_.selections, &fields, 0, &active);
    if (!ok_) return Status::InvalidArgument(abort_message_);
    return fields.items.size();
  }

  bj::object Run(Object& root) {
    Grouped fields;
    std::set<std::string> active;
    CollectInto(op_.selections, &fields, 0, &active);
    if (ok_ && op_.type == "mutation" && fields.items.size() > limits_.max_mutation_fields) {
      Abort("a mutation of " + std::to_string(fields.items.size()) + " fields: at most " +
            std::to_string(limits_.max_mutation_fields) +
            " in one request (send the others in more requests); nothing was run");
    }
    bj::value data = ok_ ? bj::value(ExecuteObject(root, fields, bj::array{})) : bj::value(nullptr);
    if (!ok_) data = nullptr;  // over a limit: no partial answer
    bj::object out;
    out["data"] = std::move(data);
    if (!errors_.empty()) out["errors"] = std::move(errors_);
    return out;
  }

 private:
  void AddError(std::string message, const bj::array& path) {
    if (errors_.size() >= 100) return;  // enough to diagnose; bounded answer
    bj::object e;
    e["message"] = std::move(message);
    if (!path.empty()) e["path"] = path;
    errors_.push_back(std::move(e));
  }

  // Resolves a value against the variables.
  bj::value Coerce(const Value& v) const {
    switch (v.kind) {
      case Value::Kind::kNull: return nullptr;
      case Value::Kind::kBool: return v.boolean;
      case Value::Kind::kString:
      case Value::Kind::kEnum: return bj::string(v.text);
      case Value::Kind::kInt: {
        int64_t i = 0;
        auto [p, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), i);
        if (ec == std::errc() && p == v.text.data() + v.text.size()) return i;
        return std::strtod(v.text.c_str(), nullptr);  // out of int64 range
      }
      case Value::Kind::kFloat: return std::strtod(v.text.c_str(), nullptr);
      case Value::Kind::kVariable: {
        if (const bj::value* given = req_.variables.if_contains(v.text)) return *given;
        for (const VariableDefinition& d : op_.variables) {
          if (d.name == v.text && d.default_value) return Coerce(*d.default_value);
        }
        return nullptr;
      }
      case Value::Kind::kList: {
        bj::array a;
        for (const Value& item : v.list) a.push_back(Coerce(item));
        return a;
      }
      case Value::Kind::kObject: {
        bj::object o;
        for (const auto& [name, field] : v.fields) o[name] = Coerce(field);
        return o;
      }
    }
    return nullptr;
  }

  // @skip(if: true) / @include(if: false) exclude a selection.
  bool Included(const std::vector<Directive>& directives) const {
    for (const Directive& d : directives) {
      if (d.name != "skip" && d.name != "include") continue;
      bool cond = false;
      for (const Argument& a : d.args) {
        if (a.name == "if") {
          bj::value v = Coerce(a.value);
          cond = v.is_bool() && v.get_bool();
        }
      }
      if (d.name == "skip" && cond) return false;
      if (d.name == "include" && !cond) return false;
    }
    return true;
  }

  void CollectInto(const std::vector<Selection>& selections, Grouped* out, int depth,
                   std::set<std::string>* active) {
    for (const Selection& s : selections) {
      if (!ok_) return;
      if (!Included(s.directives)) continue;
      switch (s.kind) {
        case Selection::Kind::kField: {
          if (++collected_ > limits_.max_fields) {
            Abort("query too complex: more than " + std::to_string(limits_.max_fields) +
                  " fields");
            return;
          }
          out->Add(s.ResponseKey(), &s);
          break;
        }
        case Selection::Kind::kInlineFragment:
          if (depth >= limits_.max_fragment_depth) {
            Abort("query too complex: fragments nested too deep");
            return;
          }
          CollectInto(s.selections, out, depth + 1, active);
          break;
        case Selection::Kind::kFragmentSpread: {
          const Fragment* f = req_.document->FindFragment(s.name);
          if (f == nullptr) {
            Abort("Unknown fragment \"" + s.name + "\"");
            return;
          }
          if (active->count(s.name)) {
            Abort("Cannot spread fragment \"" + s.name + "\" within itself");
            return;
          }
          if (depth >= limits_.max_fragment_depth) {
            Abort("query too complex: fragments nested too deep");
            return;
          }
          if (!Included(f->directives)) break;
          active->insert(s.name);
          CollectInto(f->selections, out, depth + 1, active);
          active->erase(s.name);
          break;
        }
      }
    }
  }

  // The sub-selections of a merged field.
  void CollectSub(const std::vector<const Selection*>& sels, Grouped* out) {
    std::set<std::string> active;
    for (const Selection* s : sels) CollectInto(s->selections, out, 0, &active);
  }

  // Counts a leaf value of the answer against max_answer_bytes; aborts past it.
  void Charge(const bj::value& v) {
    answer_bytes_ += ApproxJsonBytes(v);
    if (answer_bytes_ > limits_.max_answer_bytes) {
      Abort("answer too large: more than " + std::to_string(limits_.max_answer_bytes) +
            " bytes (ask for fewer fields or aliases)");
    }
  }

  // About the length of `v` as JSON text (strings without escapes).
  static size_t ApproxJsonBytes(const bj::value& v) {
    switch (v.kind()) {
      case bj::kind::string:
        return v.get_string().size() + 2;
      case bj::kind::array: {
        size_t n = 2;
        for (const bj::value& item : v.get_array()) n += ApproxJsonBytes(item) + 1;
        return n;
      }
      case bj::kind::object: {
        size_t n = 2;
        for (const auto& kv : v.get_object())
          n += kv.key().size() + 4 + ApproxJsonBytes(kv.value());
        return n;
      }
      default:
        return 8;
    }
  }

  void Abort(std::string message) {
    if (!ok_) return;
    ok_ = false;
    abort_message_ = message;
    AddError(std::move(message), bj::array{});
  }

  bool HasSubselection(const std::vector<const Selection*>& sels) const {
    for (const Selection* s : sels) {
      if (s->has_selection_set) return true;
    }
    return false;
  }

  bj::object ExecuteObject(Object& obj, const Grouped& fields, const bj::array& path) {
    bj::object out;
    for (const auto& [key, sels] : fields) {
      if (!ok_) break;
      bj::array here = path;
      here.push_back(bj::string(key));
      const Selection& f = *sels.front();
      if (f.name == "__typename") {
        out[key] = bj::string(obj.TypeName());
        continue;
      }
      if (++resolved_ > limits_.max_resolutions) {
        Abort("query too complex: more than " + std::to_string(limits_.max_resolutions) +
              " fields resolved (fewer aliases or list items)");
        break;
      }
      bj::object args;
      for (const Argument& a : f.args) args[a.name] = Coerce(a.value);
      FieldInfo info(sels, std::move(args));
      Result<Resolved> r = obj.Resolve(info);
      if (!r.ok()) {
        AddError(r.status().message(), here);
        out[key] = nullptr;
        continue;
      }
      out[key] = Complete(*r, sels, here);
    }
    return out;
  }

  bj::value Complete(Resolved& r, const std::vector<const Selection*>& sels,
                     const bj::array& path) {
    switch (r.kind) {
      case Resolved::Kind::kObject: {
        if (!r.object) return nullptr;
        Grouped sub;
        CollectSub(sels, &sub);
        if (!ok_) return nullptr;
        if (sub.empty()) {
          AddError("Field \"" + sels.front()->name + "\" of type \"" + r.object->TypeName() +
                       "\" must have a selection of subfields",
                   path);
          return nullptr;
        }
        return ExecuteObject(*r.object, sub, path);
      }
      case Resolved::Kind::kList: {
        Grouped sub;
        CollectSub(sels, &sub);
        if (!ok_) return nullptr;
        bj::array out;
        for (size_t i = 0; i < r.objects.size() && ok_; ++i) {
          bj::array here = path;
          here.push_back(int64_t(i));
          out.push_back(r.objects[i] ? bj::value(ExecuteObject(*r.objects[i], sub, here))
                                     : bj::value(nullptr));
        }
        return out;
      }
      case Resolved::Kind::kJson:
        break;
    }
    if (!HasSubselection(sels)) {
      Charge(r.json);
      if (!ok_) return nullptr;
      return std::move(r.json);
    }
    Grouped sub;
    CollectSub(sels, &sub);
    if (!ok_) return nullptr;
    return Project(r.json, sub);
  }

  bj::value Project(const bj::value& v, const Grouped& fields) {
    if (v.is_array()) {
      bj::array out;
      for (const bj::value& item : v.get_array()) out.push_back(Project(item, fields));
      return out;
    }
    if (!v.is_object()) return nullptr;  // a scalar where an object was asked for
    const bj::object& obj = v.get_object();
    bj::object out;
    for (const auto& [key, sels] : fields) {
      const std::string& name = sels.front()->name;
      const bj::value* field = obj.if_contains(name);
      if (field == nullptr) {
        out[key] = nullptr;
      } else if (HasSubselection(sels)) {
        Grouped sub;
        CollectSub(sels, &sub);
        if (!ok_) return nullptr;
        out[key] = Project(*field, sub);
      } else {
        Charge(*field);
        if (!ok_) return nullptr;
        out[key] = *field;
      }
    }
    return out;
  }

  const ExecRequest& req_;
  const Operation& op_;
  const ExecLimits& limits_;
  bj::array errors_;
  size_t collected_ = 0;
  size_t resolved_ = 0;
  size_t answer_bytes_ = 0;
  bool ok_ = true;
  std::string abort_message_;  // why the request stopped (Abort), when it did
};

std::string FieldInfo::StringArg(std::string_view n) const {
  const bj::value* v = args_.if_contains(n);
  if (v == nullptr || !v->is_string()) return {};
  return std::string(v->get_string());
}

Result<const Operation*> SelectOperation(const Document& doc, std::string_view operation_name) {
  if (!operation_name.empty()) {
    for (const Operation& op : doc.operations) {
      if (op.name == operation_name) return &op;
    }
    return Status::InvalidArgument("Unknown operation named \"" + std::string(operation_name) +
                                   "\"");
  }
  if (doc.operations.size() == 1) return &doc.operations.front();
  if (doc.operations.empty()) return Status::InvalidArgument("The document has no operation");
  return Status::InvalidArgument(
      "Must provide operation name if query contains multiple operations");
}

bj::object Execute(const ExecRequest& request, Object& query_root, Object& mutation_root,
                   const ExecLimits& limits) {
  auto op = SelectOperation(*request.document, request.operation_name);
  if (!op.ok()) return ErrorDocument(op.status().message());
  if ((*op)->type == "subscription") {
    return ErrorDocument("Subscriptions are not supported");
  }
  Executor ex(request, **op, limits);
  return ex.Run((*op)->type == "mutation" ? mutation_root : query_root);
}

Result<size_t> CountMutationFields(const ExecRequest& request, const ExecLimits& limits) {
  auto op = SelectOperation(*request.document, request.operation_name);
  if (!op.ok()) return op.status();
  if ((*op)->type != "mutation") return size_t{0};
  Executor ex(request, **op, limits);
  return ex.CountTopLevelFields();
}

bj::object ErrorDocument(std::string_view message) {
  bj::object e;
  e["message"] = message;
  bj::array errors;
  errors.push_back(std::move(e));
  bj::object out;
  out["errors"] = std::move(errors);
  return out;
}

}  // namespace cohort::compat::gql
