// A vendor client's table of media (docs/compat.md "Tables of media"): the run file its history
// line names holds each media cell's type only ("Image"); the cells with their files are in the
// run_table artifact the client logs with it, named by the line's artifact_path
// ("wandb-client-artifact://<client ID>/<entry>", store::MediaRecord::artifact_ref). This reads
// that entry and gives the document with its media cells in Cohort's form (core/table_cells.h:
// {"_type": "image", "sha256", "size", "mime", ...}, the blobs of the artifact's files), which
// the table routes serve as any table (api::ApiContext::table_document).
#pragma once

#include <string>

#include "cohort/status.h"
#include "server/api/context.h"

namespace cohort::compat {

// kNotFound while the artifact is not committed (or the reference is not one); kCorruption
// when its entry is not a table document or is bigger than a media file may be.
Result<std::string> VendorTableDocument(api::ApiContext* ctx, const std::string& entity,
                                        const std::string& artifact_ref);

}  // namespace cohort::compat
