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
// Symbolic links under root_dir are followed (the operator put them there). Every file carries
// the headers of AddPageSecurityHeaders.
//
// Threading: the returned handler is stateless apart from its configuration and may run on any
// number of threads at once.
#pragma once

#include <string>
#include <string_view>

#include "server/http/router.h"

namespace cohort::http {

Handler StaticFiles(std::string root_dir, std::string index_file = "index.html");

// The Content-Security-Policy of the web UI: its own scripts, styles and API only, images also
// from data: and blob: URLs (charts, media), audio and video from blob: URLs (the media players
// get the run's blobs as object URLs), frames only from blob: URLs (html media, shown in an
// iframe with an empty sandbox: an opaque origin, no script), and never inside a frame.
inline constexpr std::string_view kPageContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "media-src 'self' blob:; frame-src blob:; font-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

// Adds the headers of a page of the web UI: the CSP above, "X-Frame-Options: DENY" (older
// browsers), "Referrer-Policy: no-referrer" (a login token in the address never leaves in a
// Referer) and "X-Content-Type-Options: nosniff".
void AddPageSecurityHeaders(HttpResponse* resp);

// The Content-Type served for a file name, by extension ("application/octet-stream" when
// unknown).
std::string_view ContentTypeForPath(std::string_view file_name);

}  // namespace cohort::http
