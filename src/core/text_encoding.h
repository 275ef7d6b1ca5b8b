// Byte-to-text encodings used across tiers, written once: lowercase hex, base64 (decoding both
// the standard and the URL alphabets) and percent-encoding of URL path segments.
#pragma once

#include <string>
#include <string_view>

namespace cohort {

// Two lowercase hex digits per byte.
std::string HexLower(std::string_view bytes);

// Standard base64 with padding.
std::string Base64Encode(std::string_view bytes);
// Decodes standard or URL-safe base64 (padding optional); empty when `text` holds a character
// of neither alphabet.
std::string Base64Decode(std::string_view text);

// Percent-encodes every byte but the unreserved ones (RFC 3986: letters, digits, - _ . ~), with
// uppercase hex; `keep_slash` leaves '/' as it is (a path of several segments).
std::string PercentEncode(std::string_view text, bool keep_slash = false);

}  // namespace cohort
