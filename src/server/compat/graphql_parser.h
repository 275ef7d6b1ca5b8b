// A small GraphQL parser: enough of the October 2021 spec for the queries that W&B clients send
// (operations with names and variable definitions, selection sets, aliases, arguments with every
// value kind, directives, named fragments and inline fragments). Type-system definitions (schema,
// type, directive definitions) are rejected: a compatibility server executes, it is not defined
// by, the documents it receives.
//
// Hostile input is bounded: nesting deeper than ParseLimits::max_depth and documents with more
// than max_tokens tokens are syntax errors, so parsing never recurses without limit and runs in
// time linear in the input.
//
// Pure functions over values; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cohort/status.h"

namespace cohort::compat::gql {

struct ObjectField;

// An input value as written in the document (variables are resolved at execution).
struct Value {
  enum class Kind { kNull, kVariable, kInt, kFloat, kString, kBool, kEnum, kList, kObject };
  Kind kind = Kind::kNull;
  std::string text;  // variable name, number as written, string contents, enum name
  bool boolean = false;
  std::vector<Value> list;
  std::vector<ObjectField> fields;  // object fields in document order
};

// One field of an object value. A struct, not std::pair<std::string, Value>: a pair cannot
// hold the still incomplete Value inside Value's own definition (clang rejects it).
struct ObjectField {
  std::string name;
  Value value;
};

struct Argument {
  std::string name;
  Value value;
};

struct Directive {
  std::string name;
  std::vector<Argument> args;
};

// One item of a selection set: a field, a fragment spread or an inline fragment.
struct Selection {
  enum class Kind { kField, kFragmentSpread, kInlineFragment };
  Kind kind = Kind::kField;
  std::string alias;           // fields: empty when none
  std::string name;            // field name, or the spread fragment's name
  std::string type_condition;  // inline fragments: may be empty
  std::vector<Argument> args;
  std::vector<Directive> directives;
  bool has_selection_set = false;
  std::vector<Selection> selections;  // field sub-selection or inline fragment body

  // The key of this field in the response: its alias, else its name.
  const std::string& ResponseKey() const { return alias.empty() ? name : alias; }
  // The argument named `n`, or null.
  const Value* Arg(std::string_view n) const;
};

struct VariableDefinition {
  std::string name;
  std::string type;  // as written, e.g. "[String!]!"
  std::optional<Value> default_value;
};

struct Operation {
  std::string type = "query";  // "query" | "mutation" | "subscription"
  std::string name;            // empty for anonymous operations
  std::vector<VariableDefinition> variables;
  std::vector<Directive> directives;
  std::vector<Selection> selections;
};

struct Fragment {
  std::string name;
  std::string type_condition;
  std::vector<Directive> directives;
  std::vector<Selection> selections;
};

struct Document {
  std::vector<Operation> operations;
  std::vector<Fragment> fragments;

  const Fragment* FindFragment(std::string_view name) const;
};

struct ParseLimits {
  int max_depth = 48;             // nested selection sets, lists and objects together
  size_t max_tokens = 200000;     // lexical tokens in the whole document
  size_t max_string_bytes = 1 << 20;  // one string value
};

// Parses an executable document. Errors are kInvalidArgument with a message like
// "Syntax Error: Expected Name, found '}' (line 3, column 5)".
Result<Document> Parse(std::string_view text, const ParseLimits& limits = {});

}  // namespace cohort::compat::gql
