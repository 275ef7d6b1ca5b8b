// The W&B manifest of a version that has none: one logged by Cohort's SDK or `cohort artifact
// put` (docs/compat.md, "Artifacts"). The vendor's SDK downloads a version by fetching its
// manifest (`currentManifest { file { directUrl } }`) and then each file, which it names and
// caches by MD5; Cohort names files by SHA-256 and learns a blob's MD5 only when a W&B client
// uploads it. So the manifest is made when it is asked for: the MD5s the entity's blobs have
// are looked up, the missing ones computed by reading the blobs once (8 MiB at a time) and
// recorded, so that the next request is a lookup.
//
// Thread-safe.
#pragma once

#include <string>

#include "server/api/context.h"
#include "server/compat/resolvers.h"
#include "server/http/router.h"
#include "store/artifact_types.h"

namespace cohort::compat {

// The signed URL of the made manifest of the caller's version `version_pk`; empty when no URL
// can be signed (no signing key, a browser session).
std::string MadeManifestUrl(GqlContext* c, int64_t version_pk);

// GET /artifacts-manifest/{entity}/{version}: the made manifest, by signed URL.
void RegisterArtifactManifestRoute(http::Router& r, api::ApiContext* ctx);

}  // namespace cohort::compat
