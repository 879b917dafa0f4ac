#include "base/result.h"

namespace shale {

const char* errc_name(Errc c) noexcept {
  switch (c) {
    case Errc::kOk:
      return "ok";
    case Errc::kIoError:
      return "io_error";
    case Errc::kNotFound:
      return "not_found";
    case Errc::kAlreadyExists:
      return "already_exists";
    case Errc::kCorruption:
      return "corruption";
    case Errc::kInvalidArgument:
      return "invalid_argument";
    case Errc::kOutOfRange:
      return "out_of_range";
    case Errc::kFenced:
      return "fenced";
    case Errc::kConflict:
      return "conflict";
    case Errc::kTimeout:
      return "timeout";
    case Errc::kUnavailable:
      return "unavailable";
    case Errc::kNoSpace:
      return "no_space";
    case Errc::kShutdown:
      return "shutdown";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kInternal:
      return "internal";
  }
  return "unknown";
}

}  // namespace shale
