// GraphQL execution without a schema: the operation's selection sets are collected (fragments,
// inline fragments and @skip/@include applied), arguments are resolved against the request's
// variables, and root fields are handed to resolver objects. A resolver returns either plain
// JSON, which is projected onto the field's sub-selection (only the fields asked for are
// answered, unknown ones as null), or another resolver object. Errors become entries of the
// response's "errors" array with the field's path, and the field is null.
//
// Bounded: the number of collected fields per request, the depth of fragment expansion, the
// number of fields resolved and the size of the answer are capped (ExecLimits), so a small
// document cannot expand into an exponentially large answer, nor ask for one large value under
// hundreds of aliases. A request over a limit is answered {"data": null, "errors": [...]} with a
// message naming the limit.
//
// Threading: Execute is reentrant; resolver objects are used by the calling thread only.
#pragma once

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "server/compat/graphql_parser.h"

namespace cohort::compat::gql {

namespace bj = boost::json;

class Object;
using ObjectPtr = std::shared_ptr<Object>;

// What a resolver answers for one field.
struct Resolved {
  enum class Kind { kJson, kObject, kList };
  Kind kind = Kind::kJson;
  bj::value json;                  // kJson: a leaf, or plain JSON to project
  ObjectPtr object;                // kObject: null answers null
  std::vector<ObjectPtr> objects;  // kList

  static Resolved Json(bj::value v) {
    Resolved r;
    r.json = std::move(v);
    return r;
  }
  static Resolved Of(ObjectPtr o) {
    Resolved r;
    r.kind = Kind::kObject;
    r.object = std::move(o);
    return r;
  }
  static Resolved List(std::vector<ObjectPtr> list) {
    Resolved r;
    r.kind = Kind::kList;
    r.objects = std::move(list);
    return r;
  }
};

// The field being resolved: its selection (all selections merged under one response key) and
// its arguments with variables substituted.
class FieldInfo {
 public:
  FieldInfo(std::vector<const Selection*> sels, bj::object args)
      : sels_(std::move(sels)), args_(std::move(args)) {}

  const std::string& name() const { return sels_.front()->name; }
  const bj::object& args() const { return args_; }
  // An argument as a string; empty when absent, null or not a string.
  std::string StringArg(std::string_view n) const;
  const bj::value* Arg(std::string_view n) const { return args_.if_contains(n); }

 private:
  std::vector<const Selection*> sels_;
  bj::object args_;
};

class Object {
 public:
  virtual ~Object() = default;
  virtual std::string TypeName() const = 0;
  // Resolves one field of this object. An error is reported at the field's path.
  virtual Result<Resolved> Resolve(const FieldInfo& field) = 0;
};

struct ExecLimits {
  size_t max_fields = 20000;           // collected fields in the whole request
  int max_fragment_depth = 32;         // nested fragment spreads
  size_t max_resolutions = 5000;       // fields handed to resolvers in the whole request
  size_t max_answer_bytes = 16 << 20;  // JSON text of the data, approximately
  // Top-level fields of a mutation (each a write: aliases would make one rate-limited request
  // thousands of them): more are refused before any runs.
  size_t max_mutation_fields = 100;
};

struct ExecRequest {
  const Document* document = nullptr;
  bj::object variables;
  std::string operation_name;  // empty: the document's only operation
};

// The selected operation of a request, or an error (none, ambiguous, unknown name).
Result<const Operation*> SelectOperation(const Document& doc, std::string_view operation_name);

// The top-level fields of the request's operation when it is a mutation (each a write), after
// fragments and @skip/@include; 0 for a query. An error where Execute would refuse the request.
Result<size_t> CountMutationFields(const ExecRequest& request, const ExecLimits& limits = {});

// Runs the request's operation with `query_root` or `mutation_root` (by operation type) and
// returns the GraphQL response object: {"data": {...}} plus "errors" when any field failed.
// Subscriptions are answered with an error.
bj::object Execute(const ExecRequest& request, Object& query_root, Object& mutation_root,
                   const ExecLimits& limits = {});

// {"errors": [{"message": message}]}: for requests that fail before execution.
bj::object ErrorDocument(std::string_view message);

}  // namespace cohort::compat::gql
