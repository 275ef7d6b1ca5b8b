// Files of runs: the signed upload URLs that CreateRunFiles hands out, the PUT route they
// point at, and Cohort's API to list and download a run's files.
//
// The vendor's clients PUT to the returned URL without credentials, so the URL carries them:
// the id of the key that asked for it, an expiry, and an HMAC-SHA256 over the method, key id,
// run, file name and expiry keyed with the server's signing key (api/signing_keys.h: kept
// outside the store, shared by the servers of a deployment). Any server with the signing key
// can check it; revoking the key that asked for it revokes its URLs.
//
// Thread-safe.
#pragma once

#include <string>

#include "cohort/status.h"
#include "server/api/context.h"
#include "server/http/router.h"
#include "store/meta_types.h"
#include "store/run_types.h"

namespace cohort::compat {

// The upload URL of `name` for the caller `who`, signed with `keys`, valid for `ttl_s` seconds.
// kFailedPrecondition for browser sessions (uploads need an API key) and without keys.
Result<std::string> UploadUrl(const api::SigningKeys* keys, const std::string& base_url,
                              const api::AuthContext& who, const store::RunRef& ref,
                              const std::string& name, int64_t now_ms, int64_t ttl_s = 86400);

// Whether `head` (a request's head, no body yet) is a PUT to an upload URL with a valid
// signature (the body gate of large uploads, server_app.cc). kUnauthenticated naming the
// problem otherwise.
Status CheckSignedUpload(api::ApiContext* ctx, const http::HttpRequest& head);

// Where Cohort's API serves the file.
std::string DownloadUrl(const std::string& base_url, const store::RunRef& ref,
                        const std::string& name);

// Checks the name of an uploaded file: 1-1024 bytes of UTF-8, '/'-separated segments none of
// which is empty, "." or ".."; no leading or trailing '/', no backslash, no control characters.
// kInvalidArgument naming the problem otherwise.
Status ValidateUploadName(std::string_view name);

void RegisterRunFileRoutes(http::Router& r, api::ApiContext* ctx);

}  // namespace cohort::compat
