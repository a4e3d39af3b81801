// Checks of a platform file that SimGrid 3.32 would answer with an abort instead of an exception.
#pragma once

#include <filesystem>

namespace gridcast::platform {

/// Reads `xml` with TinyXML2 and throws InputError (file, line, attribute) where it is not well formed,
/// has no zone, gives a host speed, bandwidth, latency or core count out of range (zero, negative, NaN,
/// infinite), or names a routing SimGrid does not know.
void precheck_platform_xml(const std::filesystem::path& xml);

}  // namespace gridcast::platform
