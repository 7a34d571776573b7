// Status codes' names.
#include "hipgn/status.hpp"

namespace hipgn {

const char* to_string(StatusCode c) {
  switch (c) {
    case StatusCode::success: return "success";
    case StatusCode::invalid_argument: return "invalid argument";
    case StatusCode::not_built: return "not built";
    case StatusCode::not_supported: return "not supported";
    case StatusCode::unknown_instance: return "unknown instance";
    case StatusCode::runtime_error: return "runtime error";
    case StatusCode::no_device: return "no device";
  }
  return "?";
}

}  // namespace hipgn
