// StaticFiles: a route handler that serves a directory of built web-UI files.
//
// Register it under a catch-all named "path", e.g. router.Add("GET", "/{path...}",
// StaticFiles("/usr/share/cohort/ui")). It answers:
//   - a regular file under root_dir: 200 with a Content-Type from its extension; files under
//     "assets/" (content-hashed by the UI build) get "Cache-Control: public, max-age=31536000,
//     immutable", everything else "Cache-Control: no-cache";
//   - the empty path, a directory, or an unknown path whose last segment has no extension: the
//     index file (single-page-app fallback, so that client-side routes load the app);
//   - an unknown path with an extension: 404 JSON;
//   - a path with a ".." segment, a leading '/', a backslash or a NUL byte: 400 JSON; a segment
//     starting with '.' (hidden files): 404 JSON.
// Symbolic links under root_dir are followed (the operator put them there).
//
// Threading: the returned handler is stateless apart from its configuration and may run on any
// number of threads at once.
#pragma once

#include <string>
#include <string_view>

#include "server/http/router.h"

namespace cohort::http {

Handler StaticFiles(std::string root_dir, std::string index_file = "index.html");

// The Content-Type served for a file name, by extension ("application/octet-stream" when
// unknown).
std::string_view ContentTypeForPath(std::string_view file_name);

}  // namespace cohort::http
