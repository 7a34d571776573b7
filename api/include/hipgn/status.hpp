// Status codes with messages: every public call returns one; nothing throws across the API.
#pragma once

#include <string>
#include <utility>

namespace hipgn {

enum class StatusCode : int {
  success = 0,
  invalid_argument = 1,  // the problem or a tensor is not valid
  not_built = 2,         // valid, but this build compiled no instance for its key
  not_supported = 3,     // a named instance, or every instance of the key, does not support it
  unknown_instance = 4,  // no instance has that name
  runtime_error = 5,     // the GPU runtime failed
  no_device = 6,         // no GPU is present
};

struct Status {
  StatusCode code = StatusCode::success;
  std::string message;

  bool ok() const { return code == StatusCode::success; }
  static Status success() { return {}; }
  static Status error(StatusCode c, std::string m) { return {c, std::move(m)}; }
};

const char* to_string(StatusCode);

}  // namespace hipgn
